/**
 * How every Lambda function is bundled, as plain esbuild settings. Pure data: the CDK stack maps it
 * onto `NodejsFunction` bundling props (`lib/service-function.ts`) and the bench maps it onto
 * `esbuild.build` (`bench/bundles.ts`), so the bundle the bench measures is the one deployed.
 */

import { type BesideFiles, docsRendererFiles, pythonBoxFiles, pythonRuntimeFiles } from '../platform/beside-files.ts';

/** esbuild emits ESM; bundled CommonJS dependencies still call `require`, so give them one. */
export const esmRequireShim = "import { createRequire } from 'module';const require = createRequire(import.meta.url);";

export interface BundlingOptions {
  format: 'esm';
  minify: boolean;
  /** Written beside the bundle (`index.mjs.map`); NODE_OPTIONS=--enable-source-maps uses it. */
  sourceMap: boolean;
  /**
   * Whether the map carries the sources' text. Stack traces need only its mappings and names;
   * without the text the map is about a third of the size, and Node reads it at every cold start.
   */
  sourcesContent: boolean;
  target: string;
  platform: 'node';
  mainFields: readonly string[];
  /** JavaScript put at the top of the bundle. */
  banner: string;
  /** Left as runtime imports instead of bundled. */
  externalModules: readonly string[];
}

/**
 * The credential providers the SDK's default chain imports only when the environment holds no
 * credentials (`@aws-sdk/credential-provider-node`: each is a dynamic `import()` after `fromEnv`).
 * Lambda always puts the role's credentials in the environment, so a function never reaches them:
 * they stay imports of the runtime's copy, and with them the STS, SSO and sign-in clients they
 * build (about 110-130 KB of every bundle).
 */
export const credentialProvidersLambdaNeverReaches = [
  '@aws-sdk/credential-provider-ini',
  '@aws-sdk/credential-provider-http',
  '@aws-sdk/credential-provider-process',
  '@aws-sdk/credential-provider-sso',
  '@aws-sdk/credential-provider-web-identity',
  '@smithy/credential-provider-imds',
] as const;

/**
 * SDK clients a function imports only on a rare path, from the nodejs24.x runtime's copy of the SDK
 * (run from source, from node_modules): the Lambda client the step executor needs for its first
 * PythonSandbox step. Bundled, esbuild inlines a dynamic import, and it would add about 160 KB to a
 * bundle already over its target for every step; imported, only a Python step pays for it.
 */
export const importedFromTheRuntime = ['@aws-sdk/client-lambda'] as const;

export const bundlingOptions: BundlingOptions = {
  format: 'esm',
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  target: 'node24',
  platform: 'node',
  mainFields: ['module', 'main'],
  banner: esmRequireShim,
  // The AWS SDK v3 is bundled, tree-shaken and minified with the rest (the lockfile's version),
  // not imported from the nodejs24.x runtime's copy: measured faster to import and to make its
  // first call (docs/decisions.md, `npm run bench`). Only what Lambda never runs is left out.
  externalModules: [...credentialProvidersLambdaNeverReaches, ...importedFromTheRuntime],
};

/** The file name NodejsFunction gives an ESM bundle (and the Lambda handler resolves). */
export const bundleFileName = 'index.mjs';

/** What ships beside each function's bundle, by its entry (relative to the repository root). */
export const besideFilesByEntry: Readonly<Record<string, readonly BesideFiles[]>> = {
  'functions/api/get-docs-asset.ts': [docsRendererFiles],
  'functions/workers/python-runner.ts': [pythonRuntimeFiles, pythonBoxFiles],
};

/** One file to copy: from the repository root, to the bundle's directory (both relative). */
export const besideFileCopies = (entry: string): { from: string; to: string }[] =>
  (besideFilesByEntry[entry] ?? []).flatMap((files) =>
    files.names.map((name) => ({
      from: `${files.source ?? `node_modules/${files.package}`}/${name}`,
      to: `${files.dir}/${name}`,
    })),
  );
