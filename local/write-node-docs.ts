/**
 * `npm run docs:nodes`: writes docs/nodes.md, the node-type reference generated from the catalogue
 * (functions/docs/node-types.ts). test/node-types.test.ts fails while the file differs.
 */
import { writeFileSync } from 'node:fs';
import { nodeTypesPage } from '../functions/docs/node-types.ts';

const path = new URL('../docs/nodes.md', import.meta.url);
writeFileSync(path, `${nodeTypesPage()}\n`);
console.log(`wrote ${path.pathname}`);
