// Computes, once, what the Rust core answers for every case the suite compares (see
// support/rust.mjs), into the JSON file named by the first argument. run-tests.sh runs it
// and hands the file to the suite under Node, Bun and Deno.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DIALECTS, FIXTURES, acpFixtures, acpRecordings, clientToolsRequest, realCaptures, requests, stderrs, transcripts } from './support/paths.mjs';
import { acpReplayKey, eventsKey, replyKey, runAcpReplay, runReply, runTranslate, rustEvents, translateKey } from './support/rust.mjs';
import { COUNT_TOKENS_BODIES, ERROR_KINDS, HOSTILE_CASES, REFUSAL_MESSAGE, defaultRequestFile } from './support/cases.mjs';

const out = {};
const translate = (dialect, request, transcript, stderr, exit) => {
  const { status, body } = runTranslate(dialect, request, transcript, stderr, exit);
  out[translateKey(dialect, request, transcript, stderr, exit)] = { status, body: body.toString('base64') };
};
const reply = (args, stdin) => {
  const { status, retryable, body } = runReply(args, stdin);
  out[replyKey(args, stdin)] = { status, retryable, body: body.toString('base64') };
};
for (const transcript of [...transcripts(), ...realCaptures()]) {
  out[eventsKey(transcript)] = rustEvents(transcript);
}
for (const dialect of Object.keys(DIALECTS)) {
  const defaultRequest = defaultRequestFile(dialect);
  for (const transcript of transcripts()) {
    for (const request of [defaultRequest, ...requests(dialect)]) translate(dialect, request, transcript, undefined, 0);
  }
  for (const transcript of realCaptures()) {
    for (const request of [defaultRequest, clientToolsRequest(dialect)]) translate(dialect, request, transcript, undefined, 0);
  }
  for (const stderr of stderrs()) translate(dialect, defaultRequest, join(FIXTURES, 'failure_no_result.jsonl'), stderr, 1);
  for (const { file } of HOSTILE_CASES()) translate(dialect, file, join(FIXTURES, 'partial_recaps.jsonl'), undefined, 0);
  for (const [kind] of ERROR_KINDS) reply(['error', dialect, kind, REFUSAL_MESSAGE]);
  for (const recording of [...acpFixtures(), ...acpRecordings()]) out[acpReplayKey(dialect, recording)] = runAcpReplay(dialect, recording);
}
for (const body of COUNT_TOKENS_BODIES()) reply(['count-tokens'], body);
writeFileSync(process.argv[2], JSON.stringify(out));
console.log(`    ${Object.keys(out).length} Rust answers computed`);
