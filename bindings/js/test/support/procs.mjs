// The machine's processes (Linux /proc), to check that agents are stopped and reaped.
import { readFileSync, readdirSync } from 'node:fs';

/** `{ pid, state, ppid, pgrp }` of every process. */
export function processes() {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // The command name may hold spaces and parentheses: the fields follow the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.push({ pid: Number(name), state: fields[0], ppid: Number(fields[1]), pgrp: Number(fields[2]) });
  }
  return out;
}

/** Live (not zombie) processes in the process group `group`. */
export const aliveIn = (group) => processes().filter((p) => p.pgrp === group && p.state !== 'Z');

/** Zombie children of this process. */
export const zombies = () => processes().filter((p) => p.ppid === process.pid && p.state === 'Z');

/** Waits until `check()` is true, polling, for at most `ms`; returns whether it became true. */
export async function waitUntil(check, ms) {
  const deadline = performance.now() + ms;
  for (;;) {
    if (check()) return true;
    if (performance.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
