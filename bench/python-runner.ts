/**
 * Section `python`: the PythonRunner's price, in cpu and wall time, against floors measured in the
 * same rounds. Each sample is a fresh `node` holding the bundle as Lambda would: its import, the
 * first run (Pyodide's full load and the code), a second run at once (it waits for its own fresh
 * interpreter) and a third after an idle pause (its interpreter was started in the pause); once with
 * a full load per run (the default) and once with `pythonSnapshots`.
 * Cpu counts every thread of the process and every process it started (the runner's children), so
 * the thread design and the process design are measured alike.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { pythonRunner } from '../lib/workers.ts';
import { pythonRuntimeFiles } from '../platform/beside-files.ts';
import { envNames } from '../platform/definitions.ts';
import { buildBundle, buildFloorBundle, type ColdStart, coldStart, deployedSdkSource } from './bundles.ts';
import { heading, line, note } from './report.ts';
import { kb, median, ms } from './stats.ts';

const execFileAsync = promisify(execFile);

/** The pause before the third invocation: longer than an interpreter's start takes on a loaded machine. */
export const pythonIdlePauseMs = 3000;

/**
 * Cpu of this process (all its threads, µs precision) plus its children's: those reaped (cutime and
 * cstime of /proc/self/stat) and those alive or exited but not yet reaped (their own utime and
 * stime), in clock ticks of 10 ms, read until no child was reaped in between. Elsewhere than Linux
 * only the process's own.
 */
const cpuSource = `
import { readFileSync, readdirSync } from 'node:fs';
const tick = 10;
const statOf = (pid) => {
  const text = readFileSync('/proc/' + pid + '/stat', 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ').map(Number);
};
const reaped = () => { const self = statOf('self'); return (self[13] + self[14]) * tick; };
const childrenCpuMs = () => {
  try {
    // A child reaped between the two reads would be counted twice or not at all: read again.
    for (;;) {
      const before = reaped();
      let alive = 0;
      for (const task of readdirSync('/proc/self/task')) {
        for (const pid of readFileSync('/proc/self/task/' + task + '/children', 'utf8').split(' ').filter(Boolean)) {
          try { const s = statOf(pid); alive += (s[11] + s[12]) * tick; } catch {}
        }
      }
      if (reaped() === before) return before + alive;
    }
  } catch { return 0; }
};
const cpuNow = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000 + childrenCpuMs(); };
`;

/** Prints one JSON line: each span of the sample in wall and cpu time, and the three answers. */
const pythonTimer = `
${cpuSource}
const [file, eventFile] = process.argv.slice(1);
const timed = async (run) => {
  const started = performance.now();
  const startedCpu = cpuNow();
  const value = await run();
  return { ms: performance.now() - started, cpuMs: cpuNow() - startedCpu, value };
};
const imported = await timed(() => import(file));
const event = JSON.parse(readFileSync(eventFile, 'utf8'));
const first = await timed(() => imported.value.handler(event));
const warm = await timed(() => imported.value.handler(event));
const cycleCpu = cpuNow();
await new Promise((resolve) => setTimeout(resolve, ${pythonIdlePauseMs}));
const idle = await timed(() => imported.value.handler(event));
const cycleCpuMs = cpuNow() - cycleCpu;
process.stdout.write('\\n' + JSON.stringify({
  importMs: imported.ms, importCpuMs: imported.cpuMs, firstMs: first.ms, firstCpuMs: first.cpuMs,
  warmMs: warm.ms, warmCpuMs: warm.cpuMs, idleMs: idle.ms, idleCpuMs: idle.cpuMs, cycleCpuMs,
  outcome: { first: first.value, warm: warm.value, idle: idle.value },
}) + '\\n');
process.exit(0);
`;

/**
 * The floor of a run in a process of its own: a bare \`node -e 0\` started and waited for, from a
 * process that has already loaded (what any per-run process costs at least), timed the same way.
 */
const processFloorTimer = `
import { spawnSync } from 'node:child_process';
${cpuSource}
const samples = [];
for (let i = 0; i < 3; i++) {
  const started = performance.now();
  const startedCpu = cpuNow();
  spawnSync(process.execPath, ['-e', '0'], { env: {}, stdio: 'ignore' });
  samples.push({ ms: performance.now() - started, cpuMs: cpuNow() - startedCpu });
}
samples.sort((a, b) => a.cpuMs - b.cpuMs);
process.stdout.write('\\n' + JSON.stringify(samples[1]) + '\\n');
process.exit(0);
`;

export interface PythonColdStart {
  importMs: number;
  importCpuMs: number;
  /** The first invocation: Pyodide's load and the first run. */
  firstMs: number;
  firstCpuMs: number;
  /** The second invocation at once: its interpreter's start from the snapshot, then the run. */
  warmMs: number;
  warmCpuMs: number;
  /** The third invocation, after the idle pause: the run alone, its interpreter already started. */
  idleMs: number;
  idleCpuMs: number;
  /** The pause and the third invocation: the interpreter's start in the background and the run. */
  cycleCpuMs: number;
  outcome: { first: unknown; warm: unknown; idle: unknown };
}

const lastJsonLine = <T>(stdout: string): T => JSON.parse(stdout.trimEnd().split('\n').pop() ?? '') as T;

/** One PythonRunner cold start (`pythonTimer`) of the bundle in `file`, with the event in `eventFile`. */
export const pythonColdStart = async (
  file: string,
  eventFile: string,
  environment: Record<string, string> = {},
): Promise<PythonColdStart> => {
  const { stdout } = await execFileAsync(
    process.execPath,
    ['--input-type=module', '-e', pythonTimer, pathToFileURL(file).href, eventFile],
    // Lambda gives the function only its own environment; the runner's holds nothing of the stage's.
    {
      env: { PATH: process.env.PATH ?? '', ...environment },
      timeout: 180_000,
      cwd: dirname(file),
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return lastJsonLine<PythonColdStart>(stdout);
};

/** The process floor (`processFloorTimer`): the median of three bare Node processes. */
const processFloor = async (): Promise<{ ms: number; cpuMs: number }> => {
  const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', processFloorTimer], {
    env: { PATH: process.env.PATH ?? '' },
    timeout: 60_000,
  });
  return lastJsonLine(stdout);
};

const x = (value: number) => `${value.toFixed(2)}x`;

export interface PythonBenchContext {
  repoRoot: string;
  /** Where the bundles and the event file are written (inside the repository; removed by the caller). */
  outDir: string;
  /** Fresh processes per figure (at most three: a full load is seconds of cpu). */
  runs: number;
}

/**
 * The PythonRunner apart: its bundle is small, but Pyodide's files beside it are about 13 MB and its
 * first invocation loads them; each later run gets a fresh interpreter started from a snapshot of the
 * first. Floors, in the same rounds: a bundle that imports nothing (its import and a trivial call)
 * and a bare Node process (what a run in its own process costs at least). Printed, not judged.
 */
export const benchPythonRunner = async (ctx: PythonBenchContext) => {
  const { repoRoot, outDir } = ctx;
  const samples = Math.max(1, Math.min(ctx.runs, 3));
  heading(
    `PythonRunner (${pythonRunner.entry}): its bundle, Pyodide beside it, the first run and the runs after it; median of ${samples} fresh node each`,
  );
  const bundle = await buildBundle(repoRoot, outDir, pythonRunner, deployedSdkSource);
  const floor = await buildFloorBundle(repoRoot, outDir, 'floor-none', [], [], deployedSdkSource);
  const eventsDir = join(outDir, 'python-events');
  mkdirSync(eventsDir, { recursive: true });
  const event = join(eventsDir, 'run.json');
  writeFileSync(
    event,
    JSON.stringify({ code: 'result = sum(x * x for x in inputs)', inputs: [1, 2, 3], timeoutMs: 10_000 }),
  );
  const floorEvent = join(eventsDir, 'floor.json');
  writeFileSync(floorEvent, JSON.stringify({ calls: [] }));
  const modes: { name: string; environment: Record<string, string> }[] = [
    { name: 'a full load per run, a hash seed each (the default)', environment: {} },
    {
      name: "pythonSnapshots: started from the first load's snapshot",
      environment: { [envNames.pythonSnapshots]: 'true' },
    },
  ];
  const runner: PythonColdStart[][] = modes.map(() => []);
  const base: ColdStart[] = [];
  const processes: { ms: number; cpuMs: number }[] = [];
  for (let round = 0; round < samples; round++) {
    for (const [index, mode] of modes.entries()) {
      const sample = await pythonColdStart(bundle.file, event, mode.environment);
      const answers = sample.outcome as Record<'first' | 'warm' | 'idle', { ok?: boolean; result?: unknown }>;
      if ([answers.first, answers.warm, answers.idle].some((answer) => answer.ok !== true || answer.result !== 14)) {
        throw new Error(`PythonRunner did not answer the bench's run: ${JSON.stringify(sample.outcome).slice(0, 300)}`);
      }
      runner[index]?.push(sample);
    }
    base.push(await coldStart(floor.file, {}, floorEvent));
    processes.push(await processFloor());
  }
  const mid = (values: number[]) => median(values);
  const floorImportCpu = mid(base.map((b) => b.importCpuMs));
  const floorFirstCpu = mid(base.map((b) => b.firstCpuMs ?? 0));
  const processCpu = mid(processes.map((p) => p.cpuMs));
  const processWall = mid(processes.map((p) => p.ms));
  line('  bundle, minified, without source map', kb(bundle.bytes));
  line(
    `  files beside it (${pythonRuntimeFiles.names.length}: wasm, its loader, the standard library, the lock file)`,
    kb(bundle.besideBytes),
  );
  line(`  floor: a bare Node process started and ended, cpu ${ms(processCpu)} (wall ${ms(processWall)})`, '1.00x');
  for (const [index, mode] of modes.entries()) {
    const samplesOf = runner[index] ?? [];
    const fn = {
      importCpu: mid(samplesOf.map((r) => r.importCpuMs)),
      import: mid(samplesOf.map((r) => r.importMs)),
      firstCpu: mid(samplesOf.map((r) => r.firstCpuMs)),
      first: mid(samplesOf.map((r) => r.firstMs)),
      warmCpu: mid(samplesOf.map((r) => r.warmCpuMs)),
      warm: mid(samplesOf.map((r) => r.warmMs)),
      idleCpu: mid(samplesOf.map((r) => r.idleCpuMs)),
      idle: mid(samplesOf.map((r) => r.idleMs)),
      cycleCpu: mid(samplesOf.map((r) => r.cycleCpuMs)),
    };
    line(`  ${mode.name}`, '');
    line(
      `    cold import, cpu ${ms(fn.importCpu)} (wall ${ms(fn.import)}), floor ${ms(floorImportCpu)} (its first call ${ms(floorFirstCpu)})`,
      x(fn.importCpu / floorImportCpu),
    );
    line(
      `    cold run (Pyodide's full load and the code), cpu ${ms(fn.firstCpu)} (wall ${ms(fn.first)}); / process floor`,
      x(fn.firstCpu / Math.max(processCpu, 0.01)),
    );
    line(
      `    warm run at once (its fresh interpreter's start, then the code), cpu ${ms(fn.warmCpu)} (wall ${ms(fn.warm)}); / process floor`,
      x(fn.warmCpu / Math.max(processCpu, 0.01)),
    );
    line(`      its wall / the process floor's wall`, x(fn.warm / Math.max(processWall, 0.01)));
    line(
      `    warm run after ${pythonIdlePauseMs / 1000} s idle (interpreter started in the pause), cpu ${ms(fn.idleCpu)} (wall ${ms(fn.idle)}); pause and run, cpu ${ms(fn.cycleCpu)}; / process floor`,
      x(fn.cycleCpu / Math.max(processCpu, 0.01)),
    );
    line('    cold run / warm run at once (cpu)', x(fn.firstCpu / Math.max(fn.warmCpu, 0.01)));
  }
  note(
    "cpu counts every thread and every child process (children's in 10 ms ticks); deployed, Lambda's init does not include the load: the first Python step pays it. Each later step pays a fresh interpreter's start (frozen between invocations, Lambda finishes it in the next), about the 'warm run at once' line: a full load by default, a start from the snapshot with pythonSnapshots",
  );
};
