/**
 * The layering the code keeps, read from the source files themselves (no emulator): the runtime and
 * the CDK app meet only in `platform/`, entry points only wire, `functions/app/` orchestrates
 * without knowing HTTP or the AWS SDK, nothing reads the environment while a step runs, and two
 * things never share a name.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pythonRunner, workers } from '../lib/workers.ts';
import { routes } from '../platform/routes.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Every .ts file under `dir` (relative to the repository), recursively. */
const sourceFiles = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });

const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** The module specifiers a file imports (static, re-exported or dynamic). */
const importsOf = (file: string): string[] =>
  [...read(file).matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)['"]([^'"]+)['"]/gm)].map((m) => m[1] as string);

/** An import as a path from the repository root when relative, else the package specifier. */
const resolved = (file: string, specifier: string) =>
  specifier.startsWith('.') ? relative(root, resolve(root, dirname(file), specifier)) : specifier;

/** Top-level declarations of a file: name and whether it is exported. */
const declarations = (file: string) =>
  [
    ...read(file).matchAll(
      /^(export\s+)?(?:declare\s+)?(?:async\s+)?(?:const|let|function\*?|class|interface|type|enum)\s+([A-Za-z0-9_$]+)/gm,
    ),
  ].map((m) => ({ name: m[2] as string, exported: Boolean(m[1]) }));

const functionFiles = sourceFiles('functions');
const schemaFiles = sourceFiles('schemas');
const platformFiles = sourceFiles('platform');

describe('the runtime and the CDK app meet only in platform/', () => {
  /** Every repository file `file` reaches through its relative imports, itself included. */
  const reach = (file: string, seen = new Set<string>()): Set<string> => {
    if (seen.has(file)) return seen;
    seen.add(file);
    for (const specifier of importsOf(file)) {
      if (specifier.startsWith('.')) reach(resolved(file, specifier), seen);
    }
    return seen;
  };
  const reached = (files: string[]) => [...new Set(files.flatMap((file) => [...reach(file)]))];
  const under = (folder: string) => (file: string) => file.startsWith(`${folder}/`);

  // What runs in Lambda: the functions and the schemas they validate with (and the platform data they read).
  const runtime = reached([...functionFiles, ...schemaFiles]);
  const stack = reached(sourceFiles('lib'));

  it('finds both sides meeting in platform/', () => {
    expect(runtime.filter(under('platform'))).toContain('platform/routes.ts');
    expect(stack.filter(under('platform'))).toContain('platform/routes.ts');
  });

  it('runtime code never reaches lib/, even through another module', () => {
    expect(runtime.filter(under('lib'))).toEqual([]);
  });

  // The stack names its functions' entry files as strings (bundled by path), never imports them.
  it('lib/ never reaches functions/ or schemas/, even through another module', () => {
    expect(stack.filter((file) => under('functions')(file) || under('schemas')(file))).toEqual([]);
  });

  it('platform/ is pure data and rules both sides read: it imports only itself', () => {
    const outside = sourceFiles('platform').flatMap((file) =>
      importsOf(file)
        .map((specifier) => resolved(file, specifier))
        .filter((target) => !under('platform')(target))
        .map((target) => `${file} imports ${target}`),
    );
    expect(outside).toEqual([]);
  });
});

describe('entry points only wire', () => {
  const entryPoints = [...sourceFiles('functions/api'), ...sourceFiles('functions/workers')];

  it('finds the entry points', () => {
    expect(entryPoints).toContain('functions/workers/step-executor.ts');
    expect(entryPoints).toContain('functions/api/create-workflow.ts');
  });

  // So a reader finds every function's code in two folders.
  it('every entry the stack bundles is in functions/api/ or functions/workers/', () => {
    const entries = [...routes, ...workers, pythonRunner].map((f) => f.entry);
    expect(entries.filter((entry) => !entryPoints.includes(entry))).toEqual([]);
  });

  // An entry point wires an app use case; the rules (and the store behind them) are the app's.
  it.each(entryPoints)('%s imports no functions/store module', (file) => {
    const imports = importsOf(file).map((specifier) => resolved(file, specifier));
    expect(imports.filter((i) => i.startsWith('functions/store/'))).toEqual([]);
  });

  // Imports are not counted: an entry point imports the AWS clients its code uses (functions/clients/), one a line.
  it.each(entryPoints)(
    '%s is at most 40 lines besides its imports: parse the event, call one app function, answer',
    (file) => {
      const text = read(file).replace(/^import[^;]*;\n/gm, '');
      expect(text.trim().split('\n').length).toBeLessThanOrEqual(40);
    },
  );
});

describe('functions/app orchestrates', () => {
  const appFiles = sourceFiles('functions/app');

  it('holds the step state machine, the webhook delivery and the workflow creation', () => {
    expect(appFiles).toEqual(
      expect.arrayContaining([
        'functions/app/step/run-step.ts',
        'functions/app/deliver-webhook.ts',
        'functions/app/create-workflow.ts',
      ]),
    );
  });

  it.each(appFiles)('%s imports neither functions/http nor the AWS SDK', (file) => {
    const imports = importsOf(file).map((specifier) => resolved(file, specifier));
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.filter((i) => i.startsWith('functions/http/') || i.startsWith('@aws-sdk/'))).toEqual([]);
  });
});

describe('domain/ and nodes/ do not loop', () => {
  // The rules read the catalogue (a node's spec, its provider); the nodes need none of the rules:
  // what both need (run modes, the work a model step reports, the canvas) lives in nodes/.
  const importsInto = (from: string, into: string) =>
    sourceFiles(from).flatMap((file) =>
      importsOf(file)
        .map((specifier) => resolved(file, specifier))
        .filter((target) => target.startsWith(`${into}/`))
        .map((target) => `${file} imports ${target}`),
    );

  it('domain/ reads the catalogue in nodes/', () => {
    expect(importsInto('functions/domain', 'functions/nodes')).toContain(
      'functions/domain/workflow-graph.ts imports functions/nodes/catalogue/index.ts',
    );
  });

  it('nodes/ imports nothing of domain/', () => {
    expect(importsInto('functions/nodes', 'functions/domain')).toEqual([]);
  });
});

describe('the environment is read when deps are built, never while a step runs', () => {
  /** Where `process.env` may appear, and why. */
  const allowedUses = [
    // Deps are built from the environment once per cold start.
    { file: 'functions/deps.ts', pattern: /process\.env/g },
    // The stage dimension of every metric, read once at import.
    { file: 'functions/observability/metrics.ts', pattern: /defaultDimensions: \{ stage: process\.env\[/g },
    // Powertools' metrics switch, honoured by the versioned failure count and read once at import.
    { file: 'functions/observability/version-failures.ts', pattern: /process\.env\.POWERTOOLS_METRICS_DISABLED/g },
  ];
  /** A config function's environment parameter: `fooFromEnv = (env: NodeJS.ProcessEnv = process.env)`. */
  const configDefault = /\b\w+FromEnv = \(env: NodeJS\.ProcessEnv = process\.env\)/g;

  it('process.env appears only in deps.ts, at import for metrics, and as the default of a config function', () => {
    const readers = functionFiles.filter((file) => {
      let text = read(file).replace(configDefault, '');
      for (const use of allowedUses) if (use.file === file) text = text.replace(use.pattern, '');
      return /process\.env/.test(text);
    });
    expect(readers).toEqual([]);
  });

  it('config functions are called on the live environment only where handlers are built', () => {
    // `fooFromEnv()` with no argument reads process.env; with one it reads the copy it was given.
    // An entry point of functions/api builds its handler too: the public ones, which build no deps,
    // take the edge's origin check there (originCheckFromEnv).
    const callers = functionFiles.filter(
      (file) =>
        !/^functions\/(deps\.ts|workers\/)/.test(file) &&
        /\b\w+FromEnv\(\)/.test(
          read(file).replace(/export const handler = makeHandler\(\{ originCheck: originCheckFromEnv\(\) \}\);/, ''),
        ),
    );
    expect(callers).toEqual([]);
  });

  it('the executor lookup comes from Deps: functions/nodes/executors/index.ts has no executorFor', () => {
    const registry = read('functions/nodes/executors/index.ts');
    expect(registry).not.toMatch(/process\.env|executorFor/);
    expect(registry).toMatch(/export const createExecutorRegistry/);
    expect(read('functions/app/step/run-step.ts')).toMatch(/deps\.executors\(/);
  });
});

describe('two things never share a name', () => {
  it('readRun and publicHandler are each declared in one module', () => {
    for (const name of ['readRun', 'publicHandler']) {
      const files = functionFiles.filter((file) => declarations(file).some((d) => d.name === name));
      expect(files.length, `${name} is declared in ${files.join(', ')}`).toBe(1);
    }
  });

  /** The names a file re-exports: `export { a, b as c } from './x.ts'`, `export { a }` of an import, `export *`. */
  const reExports = (file: string) => {
    const text = read(file);
    const listed = [...text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}(?:\s*from\s*['"]([^'"]+)['"])?/gm)].flatMap(
      (m) =>
        (m[1] as string)
          .split(',')
          .map((part) => part.trim())
          .filter(Boolean)
          .map((part) => ({
            name: part
              .replace(/^type\s+/, '')
              .split(/\s+as\s+/)
              .pop() as string,
            from: m[2] === undefined ? undefined : resolved(file, m[2]),
          })),
    );
    const starred = [...text.matchAll(/^export\s+\*\s+from\s*['"]([^'"]+)['"]/gm)].map((m) =>
      resolved(file, m[1] as string),
    );
    return { listed, starred };
  };

  /** Every name `file` exports, its declarations and its re-exports alike (through `export *` too). */
  const exportedNames = (file: string, seen = new Set<string>()): string[] => {
    if (seen.has(file)) return [];
    seen.add(file);
    const { listed, starred } = reExports(file);
    return [
      ...declarations(file)
        .filter((d) => d.exported)
        .map((d) => d.name),
      ...listed.map((e) => e.name),
      ...starred.flatMap((target) => exportedNames(target, seen)),
    ];
  };

  /**
   * A folder's `index.ts` that only passes on its own folder's modules is that folder's front door,
   * not a second declaration; every other re-export is (a name to import from two places).
   */
  const isFrontDoor = (file: string) =>
    file.endsWith('/index.ts') &&
    (() => {
      const { listed, starred } = reExports(file);
      const targets = [...listed.flatMap((e) => (e.from === undefined ? [] : [e.from])), ...starred];
      return targets.every((target) => dirname(target) === dirname(file));
    })();

  const declaringFiles = [...functionFiles, ...schemaFiles, ...platformFiles];

  /** The modules under functions/, schemas/ and platform/ that export each name (entry points' makeHandler and handler aside). */
  const exporters = (files = declaringFiles) => {
    const owners = new Map<string, Set<string>>();
    for (const file of files) {
      if (isFrontDoor(file)) continue;
      for (const name of exportedNames(file)) {
        if (name === 'makeHandler' || name === 'handler') continue;
        owners.set(name, (owners.get(name) ?? new Set()).add(file));
      }
    }
    return owners;
  };
  const twice = (owners: Map<string, Set<string>>) =>
    [...owners].filter(([, files]) => files.size > 1).map(([name, files]) => `${name}: ${[...files]}`);

  it('no two modules under functions/, schemas/ and platform/ export the same name, re-exports included (except the makeHandler and handler of entry points)', () => {
    expect(twice(exporters())).toEqual([]);
  });

  it('reads declarations, re-exports (by name and by `export *`) and platform/', () => {
    expect(exportedNames('platform/run-statuses.ts')).toContain('RunStatus');
    expect(exportedNames('functions/nodes/catalogue/index.ts')).toContain('canConnect');
    expect(exportedNames('functions/nodes/media/index.ts')).toContain('decodePng');
    // A folder's front door passes on its own folder's modules; any other re-export is a second declaration.
    expect(isFrontDoor('functions/nodes/media/index.ts')).toBe(true);
    expect(isFrontDoor('functions/domain/run-lifecycle.ts')).toBe(false);
  });

  it('a name one module exports is not declared again, unexported, in another (a copy instead of an import)', () => {
    const owners = exporters();
    const copies = declaringFiles.flatMap((file) =>
      declarations(file)
        .filter(({ name, exported }) => !exported && owners.has(name) && !owners.get(name)?.has(file))
        .map(({ name }) => `${name}: ${file} and ${[...(owners.get(name) ?? [])]}`),
    );
    expect(copies).toEqual([]);
  });
});

describe('a function builds only the item schemas it reads', () => {
  // functions/store/items/index.ts passes every family of items on, for tests and tools; imported at
  // run time it would build every item's schema (and the contract's schemas they name) at each cold start.
  it('nothing under functions/ imports the items front door, functions/store/items/index.ts', () => {
    const front = 'functions/store/items/index.ts';
    expect(read(front)).toContain("export * from './runs.ts';");
    expect(
      functionFiles.filter((file) => file !== front && importsOf(file).some((s) => resolved(file, s) === front)),
    ).toEqual([]);
  });
});

describe('the step path loops in one place', () => {
  const stepFiles = sourceFiles('functions/app/step');
  /** The repository files `file` imports directly (relative imports only). */
  const edges = (file: string) =>
    importsOf(file)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => resolved(file, specifier));
  /** Whether `to` is reachable from `from` through relative imports. */
  const reaches = (from: string, to: string, seen = new Set<string>()): boolean => {
    if (seen.has(from)) return false;
    seen.add(from);
    return edges(from).some((next) => next === to || reaches(next, to, seen));
  };

  it('finds the step path', () => {
    expect(stepFiles).toEqual(
      expect.arrayContaining(['functions/app/step/run-step.ts', 'functions/app/step/settle-step.ts']),
    );
  });

  // A chain's next step is the step loop's next turn: nothing the loop calls calls back into it.
  it.each(stepFiles)('%s is in no import circle', (file) => {
    expect(reaches(file, file)).toBe(false);
  });
});

describe('a cold start builds only the schemas its function reads', () => {
  /** The relative modules a file imports for their values (`import type` and `export type` left out). */
  const valueImportsOf = (file: string): string[] =>
    [...read(file).matchAll(/^(?:import|export)\s+(?!type\s)(?:[^;]*?\bfrom\s+)?['"](\.[^'"]+)['"]/gm)].map((m) =>
      resolved(file, m[1] as string),
    );
  /** Every repository module `entry` evaluates when it is imported, itself included. */
  const evaluated = (entry: string, seen = new Set<string>()): Set<string> => {
    if (seen.has(entry)) return seen;
    seen.add(entry);
    for (const file of valueImportsOf(entry)) evaluated(file, seen);
    return seen;
  };

  it('reads value imports, not type imports', () => {
    expect(valueImportsOf('functions/errors/table.ts')).toContain('schemas/error-messages.ts');
    expect(valueImportsOf('functions/errors/table.ts')).not.toContain('schemas/errors.ts');
  });

  // The error bodies' schemas and the route lists are the OpenAPI document's (functions/docs/error-docs.ts):
  // every function imports the error table, so only the functions that serve the document (and the
  // node-type reference, written with the document's schemas) build them.
  it('only the functions that serve the OpenAPI document or the node-type reference evaluate the error bodies', () => {
    const entries = [...routes, ...workers].map((fn) => fn.entry);
    const building = entries.filter((entry) => evaluated(entry).has('schemas/errors.ts'));
    expect(building.sort()).toEqual([
      'functions/api/get-node-type.ts',
      'functions/api/get-openapi.ts',
      'functions/api/list-node-types.ts',
    ]);
  });

  // The catalogue builds every node type's settings schemas when it is evaluated: only what compiles,
  // checks or runs a workflow's steps needs it, not a read of a run or of a workflow.
  it("the reads of a run and of a workflow's versions evaluate no node type's catalogue entry", () => {
    const reads = [
      'functions/api/get-run.ts',
      'functions/api/get-run-step.ts',
      'functions/api/cancel-run.ts',
      'functions/api/list-workflow-versions.ts',
      'functions/api/get-workflow-version.ts',
      'functions/api/get-bulk-action.ts',
      'functions/workers/webhook-delivery.ts',
    ];
    for (const entry of reads) expect(evaluated(entry).has('functions/nodes/catalogue/index.ts'), entry).toBe(false);
  });

  it('GET /credits evaluates no schema module of a contract, nor every item family', () => {
    const modules = evaluated('functions/api/get-credits.ts');
    for (const heavy of [
      'schemas/errors.ts',
      'schemas/runs.ts',
      'schemas/workflows.ts',
      'schemas/files.ts',
      'schemas/webhook-endpoints.ts',
      'functions/store/items/index.ts',
      'functions/store/items/runs.ts',
    ])
      expect(modules.has(heavy), heavy).toBe(false);
  });
});
