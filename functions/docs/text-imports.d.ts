/**
 * Files of the renderer that esbuild inlines as strings (`with { type: 'text' }`) when it bundles the
 * asset function; see `assets.ts`.
 */
declare module 'swagger-ui-dist/swagger-ui-bundle.js' {
  const text: string;
  export default text;
}

declare module 'swagger-ui-dist/swagger-ui.css' {
  const text: string;
  export default text;
}
