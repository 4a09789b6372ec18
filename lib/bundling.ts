/**
 * How every Lambda function is bundled, as plain esbuild settings. Pure data: the CDK stack maps it
 * onto `NodejsFunction` bundling props (`lib/service-function.ts`) and the bench maps it onto
 * `esbuild.build` (`bench/bundles.ts`), so the bundle the bench measures is the one deployed.
 */

/** esbuild emits ESM; bundled CommonJS dependencies still call `require`, so give them one. */
export const esmRequireShim = "import { createRequire } from 'module';const require = createRequire(import.meta.url);";

export interface BundlingOptions {
  format: 'esm';
  minify: boolean;
  /** Written beside the bundle (`index.mjs.map`); NODE_OPTIONS=--enable-source-maps uses it. */
  sourceMap: boolean;
  target: string;
  platform: 'node';
  mainFields: readonly string[];
  /** JavaScript put at the top of the bundle. */
  banner: string;
  /** Left as runtime imports instead of bundled. */
  externalModules: readonly string[];
}

export const bundlingOptions: BundlingOptions = {
  format: 'esm',
  minify: true,
  sourceMap: true,
  target: 'node24',
  platform: 'node',
  mainFields: ['module', 'main'],
  banner: esmRequireShim,
  // The nodejs24.x runtime ships the AWS SDK v3: importing it from there keeps bundles small and
  // cold starts short, at the price of running the runtime's SDK version rather than the lockfile's.
  externalModules: ['@aws-sdk/*'],
};

/** The file name NodejsFunction gives an ESM bundle (and the Lambda handler resolves). */
export const bundleFileName = 'index.mjs';

/**
 * Data files a function reads at run time: copied into its asset directory beside the bundle when
 * it is built, never imported into it, so they are neither parsed at cold start nor counted in the
 * bundle's size. The function reads them with `fs` from `new URL('./<dir>/<name>', import.meta.url)`
 * (run from source, from the package in node_modules).
 */
export interface BesideFiles {
  /** The package in node_modules they come from. */
  package: string;
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

/** What ships beside each function's bundle, by its entry (relative to the repository root). */
export const besideFilesByEntry: Readonly<Record<string, readonly BesideFiles[]>> = {
  'functions/docs/get-docs-asset.ts': [docsRendererFiles],
};

/** One file to copy: from the repository root, to the bundle's directory (both relative). */
export const besideFileCopies = (entry: string): { from: string; to: string }[] =>
  (besideFilesByEntry[entry] ?? []).flatMap((files) =>
    files.names.map((name) => ({ from: `node_modules/${files.package}/${name}`, to: `${files.dir}/${name}` })),
  );
