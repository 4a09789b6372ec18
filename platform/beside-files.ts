/**
 * The files that ship beside a function's bundle: the stack copies them (`lib/bundling.ts`) and the
 * function reads them at run time (`functions/python/runner.ts`, `functions/docs/assets.ts`).
 */

/**
 * Data files a function reads at run time: copied into its asset directory beside the bundle when
 * it is built, never imported into it, so they are neither parsed at cold start nor counted in the
 * bundle's size. The function reads them with `fs` from `new URL('./<dir>/<name>', import.meta.url)`
 * (run from source, from the package in node_modules).
 */
export interface BesideFiles {
  /** The package in node_modules they come from, or (`source`) a directory of the repository. */
  package?: string;
  source?: string;
  /** Their names in the package. */
  names: readonly string[];
  /** The directory beside the bundle they are copied into. */
  dir: string;
}

/** The API reference renderer (`GET /docs/assets/{name}`): about 1.9 MB that no other function carries. */
export const docsRendererFiles = {
  package: 'swagger-ui-dist',
  names: ['swagger-ui-bundle.js', 'swagger-ui.css'],
  dir: 'swagger-ui-dist',
} as const satisfies BesideFiles;

/**
 * The Python runtime (Pyodide) of the PythonRunner function: the interpreter (wasm and its loader),
 * the standard library and the lock file it checks its version against, about 13 MB that only that
 * function carries. No package wheel ships: a step's code has the standard library only.
 */
export const pythonRuntimeFiles = {
  package: 'pyodide',
  names: [
    'pyodide.mjs',
    'pyodide.asm.mjs',
    'pyodide.asm.wasm',
    'python_stdlib.zip',
    'pyodide-lock.json',
    'package.json',
  ],
  dir: 'pyodide',
} as const satisfies BesideFiles;

/**
 * The script of the process each Python run lives in (`functions/python/box.ts` starts it): plain
 * JavaScript that Node runs as it is, so it is copied, never bundled.
 */
export const pythonBoxFiles = {
  source: 'functions/python',
  names: ['child.mjs'],
  dir: 'python',
} as const satisfies BesideFiles;
