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
