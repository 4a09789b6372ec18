/**
 * The Python box has no network and no in-realm route to one. A listener on loopback records every
 * connection; a run's code tries raw TCP to it from each route an adversarial probe used (a stack
 * trace's call sites → the wasm instance → Pyodide's internal API and its socket file system,
 * `ctypes`, the `socket` module, `js`), and JavaScript past every wall tries it from the box itself.
 * None may arrive. Also: without a network namespace no Python runs unless that is chosen, and
 * locally several teams' Python steps run at once.
 */
import { once } from 'node:events';
import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:net';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Box, startBox } from '../functions/python/box.ts';
import { networkNamespace } from '../functions/python/network-namespace.ts';
import type { PythonAnswer } from '../functions/python/protocol.ts';
import { createPythonRunner } from '../functions/python/runner.ts';
import { makeHandler } from '../functions/workers/python-runner.ts';
import { startLocalPythonRunner } from '../local/python-runner.ts';

/** A loopback listener that counts the connections that reach it. */
const listener = async () => {
  const state = { connections: 0 };
  const server: Server = createServer((socket) => {
    state.connections += 1;
    socket.destroy();
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { state, server, port: (server.address() as { port: number }).port };
};

/**
 * The probe's route to Pyodide's internal API: a JavaScript error's `Error` constructor, a Python
 * `prepareStackTrace`, and a WebAssembly frame's `getThis()`, the instance whose `_hiwire_get(3)` is
 * the API. Leaves `api` in scope.
 */
const internalApi = `
from pyodide.ffi import to_js, JsException, create_proxy
array = to_js([])
try:
    array.reduce(lambda x, y: x)
except JsException as error:
    TypeError_ = error.js_error.constructor
Object_ = array.constructor.prototype.__proto__.constructor
Error_ = Object_.getPrototypeOf(TypeError_)
instances = []
def prepare(error, sites):
    for site in sites:
        this = site.getThis()
        if this is not None and hasattr(this, 'exports'):
            instances.append(this)
    return ''
Error_.prepareStackTrace = create_proxy(prepare)
Error_.new('probe').stack
api = instances[0].exports._hiwire_get(3)
`;

/** Python's own socket to the listener, once a route has run (PORT is replaced). */
const tcp = `
import socket
s = socket.create_connection(("127.0.0.1", PORT), timeout=2)
s.sendall(b"x")
result = "connected"
`;

/** Each route, ending in raw TCP to the listener. */
const routes = (port: number): Record<string, string> => {
  const connect = tcp.replace('PORT', String(port));
  return {
    'the internal API through prepareStackTrace': `${internalApi}\nresult = sorted(Object_.keys(api))`,
    "the internal API's socket file system": `${internalApi}\napi.initializeNodeSockFS()\n${connect}`,
    "the internal API's dynamic library loader": `${internalApi}\nresult = str(api.loadDynlib("/x.so"))`,
    "the internal API's tests": `${internalApi}\nresult = str(api.tests)`,
    'Error.captureStackTrace with prepareStackTrace': `${internalApi.replace("Error_.new('probe').stack", 'holder = Object_.new()\nError_.captureStackTrace(holder)\nholder.stack')}\nresult = str(api)`,
    ctypes: `import ctypes\nlibc = ctypes.CDLL(None)\nresult = libc.socket(2, 1, 0)\n${connect}`,
    '_ctypes by _imp.create_builtin': `import _imp, importlib.machinery\nm = _imp.create_builtin(importlib.machinery.ModuleSpec("_ctypes", None))\nresult = m.__name__`,
    'a C test module': 'import _testcapi\nresult = str(_testcapi)',
    'the socket module': connect,
    js: `import js\nresult = str(js.require("node:net"))\n${connect}`,
  };
};

const limits = { memoryMb: 128, jsHeapMb: 128, processMemoryMb: 400, maxOutputChars: 1000 };

describe('the Python box reaches no network', { timeout: 180_000 }, () => {
  const runner = createPythonRunner(limits, { snapshots: true });
  const python = makeHandler(runner.run);
  beforeAll(() => runner.warm(), 120_000);
  afterAll(() => runner.close());

  it('closes every route the probe used, and no connection from any of them reaches a loopback listener', async () => {
    const { state, server, port } = await listener();
    try {
      const open: Record<string, PythonAnswer> = {};
      for (const [route, code] of Object.entries(routes(port))) {
        const answer = await python({ code, inputs: [], timeoutMs: 10_000 });
        if (answer.ok) open[route] = answer;
      }
      // Let anything a route started (an import of node:net, a connect) finish before counting.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(open).toEqual({});
      expect(state.connections).toBe(0);
    } finally {
      server.close();
    }
  });

  it('starts the child in a network namespace of its own: raw TCP from JavaScript past every wall reaches nothing', async () => {
    const wall = networkNamespace();
    // This machine (and CI) can make one; where it cannot, the runner refuses to run Python (below).
    if (!('prefix' in wall)) throw new Error(`no network namespace here: ${wall.unavailable}`);
    const { state, server, port } = await listener();
    const files = {
      indexPath: `${realpathSync(dirname(createRequire(import.meta.url).resolve('pyodide/pyodide.mjs')))}/`,
      childScript: realpathSync(fileURLToPath(new URL('./fixtures/box-network.mjs', import.meta.url))),
    };
    let box: Box | undefined;
    try {
      box = startBox({ files, limits: { ...limits, maxResultBytes: 64 * 1024 }, networkPrefix: wall.prefix });
      await box.ready;
      const outcome = await box.run({ code: '', inputsJson: JSON.stringify([port]) }, 20_000);
      if (!('answered' in outcome) || !('ok' in outcome.answered)) throw new Error(JSON.stringify(outcome));
      expect(JSON.parse(outcome.answered.resultJson)).toEqual({ tcp: { refused: 'ENETUNREACH' } });
      expect(state.connections).toBe(0);
    } finally {
      await box?.kill();
      server.close();
    }
  });

  it('runs no Python where no network namespace can be made, unless that is chosen', async () => {
    const missing = () => ({ unavailable: 'util-linux `unshare` is not installed' });
    const strict = createPythonRunner(limits, { findNetworkNamespace: missing });
    try {
      const answer = await strict.run({ code: 'result = 1', inputs: [], timeoutMs: 1000 });
      expect(answer).toMatchObject({ ok: false, error: 'exception' });
      expect(answer.ok ? '' : answer.message).toMatch(
        /cannot cut its process off the network.*PYTHON_NETWORK_NAMESPACE=optional/,
      );
      expect(strict.loads).toEqual({ full: 0, fromSnapshot: 0 });
    } finally {
      await strict.close();
    }
  });
});

describe('npm start runs several Python steps at once', { timeout: 180_000 }, () => {
  const { runner, handler } = startLocalPythonRunner({ PYTHON_SNAPSHOTS: 'true', PYTHON_LOCAL_RUNS: '2' });
  beforeAll(() => runner.warm(), 120_000);
  afterAll(() => runner.close());

  it("answers one team's short step while another team's long step is still running", async () => {
    const settled: string[] = [];
    // Team A's step runs until it is killed at its limit.
    const long = handler({ code: 'while True:\n    pass', inputs: [], timeoutMs: 15_000 }).then((answer) => {
      settled.push('long');
      return answer;
    });
    // Team B's step, sent once A's code is running: it must not wait behind it.
    while (runner.running < 1) await new Promise((resolve) => setTimeout(resolve, 20));
    const short = await handler({ code: 'result = sum(inputs)', inputs: [1, 2], timeoutMs: 10_000 });
    settled.push('short');
    expect(short).toMatchObject({ ok: true, result: 3 });
    expect(settled).toEqual(['short']);
    expect(await long).toMatchObject({ ok: false, error: 'timeout' });
    expect(settled).toEqual(['short', 'long']);
  });

  it('runs two long steps in two processes at the same time', async () => {
    const spin = { code: 'while True:\n    pass', inputs: [], timeoutMs: 15_000 };
    const both = Promise.all([handler(spin), handler(spin)]);
    let most = 0;
    let done = false;
    void both.finally(() => {
      done = true;
    });
    while (!done && most < 2) {
      most = Math.max(most, runner.running);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(most).toBe(2);
    expect(await both).toMatchObject([{ error: 'timeout' }, { error: 'timeout' }]);
  });
});
