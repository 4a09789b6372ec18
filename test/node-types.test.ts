/**
 * The node-type reference is complete and current: every catalogue entry has its words, every
 * setting its meaning, every stated default is a value its setting accepts, and docs/nodes.md is
 * the page the catalogue generates (`npm run docs:nodes` rewrites it).
 */
import { readFileSync } from 'node:fs';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { nodeTypeReferences, nodeTypesPage } from '../functions/docs/node-types.ts';
import { catalogue } from '../functions/nodes/catalogue/index.ts';
import { modelConfigEntries } from '../functions/nodes/catalogue/node-spec.ts';
import { nodeWords } from '../functions/nodes/catalogue/words.ts';
import { NodeTypeReferenceSchema } from '../schemas/node-types.ts';
import { nodeTypes } from '../schemas/workflow-words.ts';

/** Settings whose words are in their schemas: the model steps' shared ones and the run input's key. */
const wordedBySchema = new Set([...Object.keys(modelConfigEntries), 'apiInputKey']);

describe('the node-type reference', () => {
  it('has words for every node type and every setting, and none for a setting a type does not have', () => {
    for (const type of nodeTypes) {
      const words = nodeWords[type];
      expect(words?.does.trim(), type).toBeTruthy();
      const settings = Object.keys(catalogue[type].configSchema.entries);
      for (const setting of settings) {
        if (wordedBySchema.has(setting)) continue;
        expect(words.settings?.[setting]?.trim(), `${type}.config.${setting}`).toBeTruthy();
      }
      for (const named of [...Object.keys(words.settings ?? {}), ...Object.keys(words.defaults ?? {})]) {
        expect(settings, `${type} words name ${named}`).toContain(named);
      }
    }
  });

  it('states only defaults their settings accept', () => {
    for (const type of nodeTypes) {
      const entries = catalogue[type].configSchema.entries;
      for (const [setting, value] of Object.entries(nodeWords[type].defaults ?? {})) {
        expect(v.safeParse(entries[setting] as v.GenericSchema, value).success, `${type}.config.${setting}`).toBe(true);
      }
    }
  });

  it('gives every type as its answer schema says, with every setting described', () => {
    const references = nodeTypeReferences();
    expect(references.map((node) => node.type)).toEqual([...nodeTypes]);
    for (const node of references) {
      expect(v.safeParse(NodeTypeReferenceSchema, node).issues, node.type).toBeUndefined();
      for (const setting of node.settings) expect(setting.description, `${node.type}.${setting.name}`).not.toBe('');
      if (node.model) expect(node.price.formula, node.type).toMatch(/rate/);
    }
  });

  it('is what docs/nodes.md says (run `npm run docs:nodes` after changing the catalogue)', () => {
    const page = readFileSync(new URL('../docs/nodes.md', import.meta.url), 'utf8');
    expect(page).toBe(`${nodeTypesPage()}\n`);
  });
});
