/**
 * The PythonRunner function's handler over a real Pyodide, each run in a child process of its own
 * in the operating system's box. Most runs here use `snapshots` (one full load for the file: a load
 * is seconds of CPU; every other run starts from its snapshot); the default, a full load and a hash
 * seed per run, has its own block at the end. Proves the limits, the sandbox's walls, the escapes the
 * security review found, and that no run sees what an earlier one left.
 */
import { once } from 'node:events';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PythonAnswer } from '../functions/python/protocol.ts';
import { createPythonRunner } from '../functions/python/runner.ts';
import { makeHandler } from '../functions/workers/python-runner.ts';

const limits = { memoryMb: 128, jsHeapMb: 128, processMemoryMb: 400, maxOutputChars: 1000 };
const runner = createPythonRunner(limits, { snapshots: true });
const handler = makeHandler(runner.run);
const python = (code: string, inputs: unknown[] = [], timeoutMs = 5000) => handler({ code, inputs, timeoutMs });
const failureOf = (answer: PythonAnswer) => (answer.ok ? undefined : { error: answer.error, message: answer.message });

// A secret in this process's environment: the interpreter must not see it by any route.
const secret = 'python-runner-test-secret-value';
beforeAll(async () => {
  process.env.PYTHON_RUNNER_TEST_SECRET = secret;
  await runner.warm();
}, 120_000);
afterAll(async () => {
  delete process.env.PYTHON_RUNNER_TEST_SECRET;
  await runner.close();
});

/** Routes from Python to the process's environment, host files or network: each must raise. */
const escapes = [
  'import js\nresult = str(js.process.env)',
  'from pyodide.code import run_js\nresult = run_js("JSON.stringify(process.env)")',
  'from pyodide.ffi import to_js\nresult = to_js({}).constructor.constructor("return JSON.stringify(process.env)")()',
  'from pyodide.ffi import to_js\nf = to_js(lambda: 0).constructor.constructor\nresult = f("return 1")()',
  'result = open("/proc/self/environ").read()',
  // `pyodide_js` (the Pyodide API) comes back once its sys.modules block is deleted: it is empty.
  'import sys\ndel sys.modules["pyodide_js"]\nimport pyodide_js\npyodide_js.mountNodeFS("/host", "/proc")\nresult = open("/host/self/environ").read()',
  'import sys\ndel sys.modules["pyodide_js"]\nimport pyodide_js\nresult = pyodide_js._module.FS.readFile("/proc/self/environ")',
  'import js\nresult = str(js.fetch)',
  'import pyodide.http',
  // The security review's routes to JavaScript's `Function`, `Object` and the internal API.
  'import sys\nresult = str(sys.modules["pyodide_js._api"].tests.Function("return process.env")())',
  'import sys\nresult = str(sys.modules["pyodide_js._api"].config.constructor.keys(sys.modules["pyodide_js._api"]))',
  'import sys\nfor name in ["pyodide_js", "pyodide_js._api"]:\n    del sys.modules[name]\nimport pyodide_js._api as api\nresult = str(api.tests.Function)',
  'import sys\ndel sys.modules["pyodide_js._api"]\nimport pyodide_js._api as api\nresult = str(api.loadBinaryFile("/proc/self/environ"))',
  'import sys\ndel sys.modules["pyodide_js._api"]\nimport pyodide_js._api as api\nresult = str(api.loadDynlib("/x.so"))',
  'import sys\ndel sys.modules["pyodide_js._api"]\nimport pyodide_js._api as api\nresult = str(api.initializeNodeSockFS())',
  'import js\nresult = str(js.process.report.getReport())',
  'from pyodide.ffi import to_js\nresult = str(to_js({}).constructor.constructor("return import(\'node:fs\')")())',
  'from pyodide.code import run_js\nresult = str(run_js("import(\'node:child_process\')"))',
  'from pyodide.code import run_js\nresult = str(run_js("import(\'node:http\')"))',
];

/** One run trying every escape in turn: the ones that did not raise, with what they gave. */
const allEscapes = `
escaped = []
for code in ${JSON.stringify(escapes)}:
    try:
        scope = {}
        exec(code, scope)
        escaped.append([code, str(scope.get("result"))[:200]])
    except BaseException:
        pass
result = escaped`;

// Each run starts a process (about 0.6 s of cpu): on a loaded 2-core machine a test of several runs needs
// more than the default 30 s, and one that times out leaves its runs going into the next test.
describe('PythonRunner', { timeout: 120_000 }, () => {
  it('walls in the first run (in the process that made the snapshot) as it does the runs after it', async () => {
    // warm() loaded the one worker in full; no worker has started from its snapshot yet.
    expect(runner.loads).toEqual({ full: 1, fromSnapshot: 0 });
    const first = await python(allEscapes);
    const next = await python(allEscapes);
    // The second ran in a process started from the snapshot.
    expect(runner.loads.full).toBe(1);
    expect(runner.loads.fromSnapshot).toBeGreaterThan(0);
    for (const answer of [first, next]) {
      expect(answer).toMatchObject({ ok: true, result: [] });
      expect(JSON.stringify(answer)).not.toContain(secret);
    }
  });

  it('gives the code its inputs and answers its result as JSON, with stdout and stderr', async () => {
    const answer = await python(
      'import sys\nprint("total", sum(inputs[0]))\nprint("careful", file=sys.stderr)\nresult = {"sum": sum(inputs[0]), "name": inputs[1]}',
      [[1, 2, 3], 'house'],
    );
    expect(answer).toEqual({ ok: true, result: { sum: 6, name: 'house' }, stdout: 'total 6\n', stderr: 'careful\n' });
    expect(await python('x = 1')).toMatchObject({ ok: true, result: null });
  });

  it('starts each run with fresh globals', async () => {
    await python('leftover = 42\nresult = 1');
    expect(failureOf(await python('result = leftover'))).toEqual({
      error: 'exception',
      message: "raised NameError: name 'leftover' is not defined",
    });
  });

  it('keeps at most its output limit of stdout', async () => {
    const answer = await python('for i in range(1000):\n    print("line", i)\nresult = "done"');
    expect(answer).toMatchObject({ ok: true, result: 'done' });
    expect(answer.stdout.length).toBe(1000);
    expect(answer.stdout.startsWith('line 0\nline 1\n')).toBe(true);
  });

  it('fails an exception with its type and message, keeping what was printed before it', async () => {
    const answer = await python('print("before")\n1 / 0');
    expect(failureOf(answer)).toEqual({ error: 'exception', message: 'raised ZeroDivisionError: division by zero' });
    expect(answer.stdout).toBe('before\n');
    expect(failureOf(await python('result = object()'))).toEqual({
      error: 'exception',
      message: 'raised TypeError: result is not JSON: Object of type object is not JSON serializable',
    });
  });

  it('gives each run a fresh interpreter: nothing a run patches, hooks, writes or sets reaches the next', async () => {
    const hostile = [
      'import atexit, builtins, json, os, random, sys, threading',
      'before = {"atexit": atexit._ncallbacks(), "cwd": os.getcwd()}',
      'json.dumps = lambda *args, **kwargs: \'"patched"\'',
      'json.loads = lambda *args, **kwargs: "patched"',
      'builtins.len = lambda value: -1',
      'builtins.leftover = "from run A"',
      'fake = type(sys)("statistics")',
      'fake.mean = lambda values: -1',
      'sys.modules["statistics"] = fake',
      'sys.modules["spy"] = type(sys)("spy")',
      'sys.modules["spy"].seen = []',
      'def hook(frame, event, arg):',
      '    sys.modules["spy"].seen.append(frame.f_code.co_filename)',
      '    return hook',
      'sys.settrace(hook)',
      'sys.setprofile(hook)',
      'threading.settrace(hook)',
      'atexit.register(lambda: None)',
      'open("/tmp/x", "w").write("left by run A")',
      'open("/home/pyodide/y", "w").write("left by run A")',
      'os.environ["X"] = "left by run A"',
      'os.chdir("/tmp")',
      'random.seed(1)',
      'global_leftover = "from run A"',
      'result = before',
    ].join('\n');
    const a = await python(hostile);
    expect(a).toMatchObject({ ok: true });
    const before = (a as { result: { atexit: number; cwd: string } }).result;
    const b = await python(
      [
        'import atexit, builtins, json, os, random, statistics, sys, threading',
        'result = {',
        '    "dumps": json.dumps({"n": len(inputs)}),',
        '    "mean": statistics.mean(inputs),',
        '    "builtins": hasattr(builtins, "leftover"),',
        '    "global": "global_leftover" in globals(),',
        '    "spy": "spy" in sys.modules,',
        '    "hooks": [sys.gettrace(), sys.getprofile(), threading.gettrace()],',
        '    "atexit": atexit._ncallbacks(),',
        '    "files": [os.path.exists("/tmp/x"), os.path.exists("/home/pyodide/y")],',
        '    "env": os.environ.get("X"),',
        '    "cwd": os.getcwd(),',
        '    "random": random.random() == random.Random(1).random(),',
        '}',
      ].join('\n'),
      [2, 4, 6],
    );
    expect(b).toEqual({
      ok: true,
      result: {
        dumps: '{"n": 3}',
        mean: 4,
        builtins: false,
        global: false,
        spy: false,
        hooks: [null, null, null],
        atexit: before.atexit,
        files: [false, false],
        env: null,
        cwd: before.cwd,
        random: false,
      },
      stdout: '',
      stderr: '',
    });
    // Runs start from the snapshot: one full load for the whole file (the first), none since.
    expect(runner.loads.full).toBe(1);
    expect(runner.loads.fromSnapshot).toBeGreaterThan(0);
  });

  it("seeds each run's random module afresh, though all start from the same snapshot", async () => {
    const draws = [];
    for (let i = 0; i < 2; i++) draws.push(await python('import random\nresult = random.getrandbits(64)'));
    expect(draws.every((d) => d.ok)).toBe(true);
    expect(draws[0]).not.toEqual(draws[1]);
  });

  it("with snapshots, gives each container (runner) its own string-hash seed; its runs share the snapshot's", async () => {
    const hash = async (run: typeof python) => {
      const answer = await run('result = [hash("abc"), hash(b"abc")]');
      if (!answer.ok) throw new Error(answer.message);
      return answer.result;
    };
    const other = createPythonRunner(limits, { snapshots: true });
    try {
      const otherPython = (code: string) => other.run({ code, inputs: [], timeoutMs: 5000 });
      const [first, second, elsewhere] = [await hash(python), await hash(python), await hash(otherPython)];
      // The price of the default's seed per run is a full load per run (docs/decisions.md).
      expect(second).toEqual(first);
      expect(elsewhere).not.toEqual(first);
    } finally {
      await other.close();
    }
  }, 120_000);

  it('stops code that runs past its time, and the next run still works', async () => {
    expect(failureOf(await python('while True: pass', [], 300))).toEqual({
      error: 'timeout',
      message: 'timed out after 300 ms',
    });
    expect(await python('result = inputs', [7])).toMatchObject({ ok: true, result: [7] });
  });

  it('stops code that catches KeyboardInterrupt: its process is killed, the next run still works', async () => {
    const code = 'while True:\n    try:\n        while True: pass\n    except KeyboardInterrupt:\n        pass';
    expect(failureOf(await python(code, [], 300))).toEqual({ error: 'timeout', message: 'timed out after 300 ms' });
    expect(await python('result = 2 + 2')).toMatchObject({ ok: true, result: 4 });
  }, 120_000);

  it('fails code that allocates past the memory limit, and the next run still works', async () => {
    expect(failureOf(await python('data = bytearray(10**9)'))).toEqual({
      error: 'memory',
      message: 'exceeded the 128 MB memory limit',
    });
    expect(failureOf(await python('chunks = []\nwhile True:\n    chunks.append(bytearray(10**6))'))).toEqual({
      error: 'memory',
      message: 'exceeded the 128 MB memory limit',
    });
    expect(await python('result = len(bytearray(10**6))')).toMatchObject({ ok: true, result: 1_000_000 });
  }, 120_000);

  it('sees no environment secret, from Python or through JavaScript', async () => {
    const env = await python('import os\nresult = dict(os.environ)');
    expect(JSON.stringify(env)).not.toContain(secret);
    expect(env.ok && Object.keys(env.result as object).some((k) => k.startsWith('AWS_'))).toBe(false);
    for (const code of escapes) {
      const answer = await python(code);
      expect(answer.ok, code).toBe(false);
      expect(JSON.stringify(answer), code).not.toContain(secret);
    }
  });

  it('reaches no network: no fetch in js, no sockets, no pyodide.http', async () => {
    let connections = 0;
    const server = createServer((socket) => {
      connections += 1;
      socket.destroy();
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    try {
      const attempts = [
        'import js\njs.fetch',
        'import pyodide.http',
        `import urllib.request\nurllib.request.urlopen("http://127.0.0.1:${port}/")`,
        `import socket\ns = socket.create_connection(("127.0.0.1", ${port}))\ns.sendall(b"x")\nresult = s.recv(1)`,
      ];
      for (const code of attempts) expect((await python(code)).ok, code).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });

  it('installs no package: micropip is absent and the standard library is all there is', async () => {
    expect(failureOf(await python('import micropip'))?.error).toBe('exception');
    expect(failureOf(await python('import numpy'))?.message).toMatch(/ModuleNotFoundError/);
    expect(
      await python('import json, re, math, statistics\nresult = statistics.mean(inputs)', [1, 2, 3]),
    ).toMatchObject({
      ok: true,
      result: 2,
    });
  });

  it('gets nothing from spawning a process or opening a file outside its own', async () => {
    const attempts = [
      'import subprocess\nresult = subprocess.run(["id"], capture_output=True).stdout.decode()',
      'import os\nresult = os.popen("id").read()',
      'result = open("/etc/passwd").read()',
      'result = open("/proc/self/environ").read()',
      'import os\nresult = os.listdir("/work")',
    ];
    for (const code of attempts) expect((await python(code)).ok, code).toBe(false);
  });

  it('ends the to_js buffer bomb (memory outside the interpreter and the heap) as a memory failure of that run alone', async () => {
    const bomb =
      'from pyodide.ffi import to_js\nkeep = []\nfor i in range(200):\n    keep.append(to_js(b"x" * 10**7))\nresult = len(keep)';
    expect(failureOf(await python(bomb))).toEqual({
      error: 'memory',
      message: 'exceeded the 400 MB memory limit of its process',
    });
    expect(await python('result = inputs', [3])).toMatchObject({ ok: true, result: [3] });
  });

  it('fails a result over 256 KB of JSON with a clear message, and keeps one at the limit', async () => {
    expect(failureOf(await python('result = "x" * 300_000'))).toEqual({
      error: 'result-size',
      message: 'the result is 293.0 KB of JSON, over the 256 KB limit',
    });
    // 256 KB exactly: the string's 262,142 characters and its two quotes.
    const atLimit = await python('result = "x" * (256 * 1024 - 2)');
    expect(atLimit.ok && (atLimit.result as string).length).toBe(256 * 1024 - 2);
  });

  it('runs each run in a process of its own, started from the snapshot', async () => {
    // warm() leaves exactly one process waiting (started now, or by the last run's retire, which
    // starts the next one just after its answer), so the counts are read at rest, not mid-retire.
    await runner.warm();
    const before = runner.loads.fromSnapshot;
    await python('result = 1');
    await python('result = 2');
    await runner.warm();
    // The waiting one served the first run; the second and the one waiting now are new.
    expect(runner.loads.fromSnapshot - before).toBe(2);
    expect(runner.loads.full).toBe(1);
  });

  it('refuses a request outside the contract', async () => {
    await expect(handler({ code: 'result = 1', inputs: [], timeoutMs: 60_000 })).rejects.toThrow();
    await expect(handler({ code: '', inputs: [], timeoutMs: 1000 })).rejects.toThrow();
  });
});

describe('PythonRunner by default: a full load per run, a string-hash seed each', { timeout: 180_000 }, () => {
  const fresh = createPythonRunner(limits);
  const run = (code: string) => makeHandler(fresh.run)({ code, inputs: [], timeoutMs: 5000 });
  afterAll(() => fresh.close());

  it('draws a new hash seed for every run, keeps the walls, and never writes a snapshot', async () => {
    const hashes = [];
    for (let i = 0; i < 2; i++) {
      const answer = await run('result = [hash("abc"), hash(b"abc")]');
      if (!answer.ok) throw new Error(answer.message);
      hashes.push(answer.result);
    }
    expect(hashes[1]).not.toEqual(hashes[0]);
    expect(await run(allEscapes)).toMatchObject({ ok: true, result: [] });
    expect(fresh.loads.fromSnapshot).toBe(0);
    expect(fresh.loads.full).toBeGreaterThanOrEqual(3);
  });
});
