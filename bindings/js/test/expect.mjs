// Computes, once, what the Rust core answers for every case the suite compares (see
// support/rust.mjs), into the JSON file named by the first argument. run-tests.sh runs it
// and hands the file to the suite under Node, Bun and Deno.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, realCaptures, requests, stderrs, transcripts } from './support/paths.mjs';
import { eventsKey, rustEvents, runTranslate, translateKey } from './support/rust.mjs';
import { HOSTILE_CASES, defaultRequestFile } from './support/cases.mjs';

const out = {};
const translate = (request, transcript, stderr, exit) => {
  const { status, body } = runTranslate(request, transcript, stderr, exit);
  out[translateKey(request, transcript, stderr, exit)] = { status, body: body.toString('base64') };
};
for (const transcript of [...transcripts(), ...realCaptures()]) {
  out[eventsKey(transcript)] = rustEvents(transcript);
}
const defaultRequest = defaultRequestFile();
for (const transcript of transcripts()) {
  for (const request of [defaultRequest, ...requests()]) translate(request, transcript, undefined, 0);
}
for (const transcript of realCaptures()) {
  for (const request of [defaultRequest, join(FIXTURES, 'requests/client_tools.json')]) translate(request, transcript, undefined, 0);
}
for (const stderr of stderrs()) translate(defaultRequest, join(FIXTURES, 'failure_no_result.jsonl'), stderr, 1);
for (const { file } of HOSTILE_CASES()) translate(file, join(FIXTURES, 'partial_recaps.jsonl'), undefined, 0);
writeFileSync(process.argv[2], JSON.stringify(out));
console.log(`    ${Object.keys(out).length} Rust answers computed`);
