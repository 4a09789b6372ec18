import './support/test-providers.ts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  combineLicences,
  licenceFor,
  provenanceFor,
  stampLicenceModel,
  strictestCommercialUse,
} from '../functions/domain/licence.ts';
import { ancestry } from '../functions/domain/run-graph.ts';
import type { Canvas } from '../functions/nodes/catalogue/canvas.ts';
import type { CommercialUse } from '../platform/providers.ts';
import type { LicenceModel } from '../schemas/run-words.ts';

const at = '2026-01-02T03:04:05.000Z';

describe('licenceFor', () => {
  it('is undefined when no model step is involved', () => {
    expect(licenceFor([])).toBeUndefined();
    expect(provenanceFor([])).toEqual({ ai_generated: false });
  });

  it('stamps every LicenceModel field from the registry', () => {
    expect(
      stampLicenceModel({ nodeId: 'img', provider: 'sandbox', model: 'sandbox-image-1', stampedAt: new Date(at) }),
    ).toEqual({
      node_id: 'img',
      provider_key: 'sandbox',
      model: 'sandbox-image-1',
      licence: 'CC0-1.0',
      licence_url: 'https://creativecommons.org/publicdomain/zero/1.0/',
      commercial_use: 'yes',
      terms_url: null,
      stamped_at: at,
    });
  });

  it('is as strict as the strictest model: no > unchecked > provider_terms > yes', () => {
    const sandbox = { nodeId: 'a', provider: 'sandbox', model: 'sandbox-image-1', stampedAt: at };
    const studio = { nodeId: 'b', provider: 'studio-x', model: 'x', stampedAt: at };
    const open = { nodeId: 'c', provider: 'openai-compatible', model: 'chat', stampedAt: at };
    const research = { nodeId: 'd', provider: 'byok-y', model: 'y-research-1', stampedAt: at };
    expect(licenceFor([sandbox])?.commercial_use).toBe('yes');
    expect(licenceFor([sandbox, studio])?.commercial_use).toBe('provider_terms');
    expect(licenceFor([sandbox, studio, open])?.commercial_use).toBe('unchecked');
    expect(licenceFor([research, sandbox, studio, open])?.commercial_use).toBe('no');
    expect(licenceFor([research, sandbox])?.models.map((m) => m.node_id)).toEqual(['a', 'd']);
  });

  it('lists each model step once, with lineage', () => {
    const model = stampLicenceModel({ nodeId: 'a', provider: 'sandbox', model: 'sandbox-text-1', stampedAt: at });
    expect(combineLicences([model, model])?.models).toHaveLength(1);
    expect(provenanceFor([model])).toEqual({
      ai_generated: true,
      generated_by: [{ node_id: 'a', provider: 'sandbox', model: 'sandbox-text-1' }],
      licence: { commercial_use: 'yes', models: [model] },
    });
  });

  it('strictestCommercialUse agrees with a reference ranking (property)', () => {
    const rank = { no: 0, unchecked: 1, provider_terms: 2, yes: 3 } as const;
    const use = fc.constantFrom<CommercialUse>('yes', 'provider_terms', 'no', null);
    fc.assert(
      fc.property(fc.array(use, { minLength: 1, maxLength: 8 }), (uses) => {
        const reference = uses.map((u) => u ?? 'unchecked').reduce((a, b) => (rank[a] <= rank[b] ? a : b));
        return strictestCommercialUse(uses) === reference;
      }),
    );
  });
});

describe('lineage over random workflows (property)', () => {
  const providers = ['sandbox', 'studio-x', 'openai-compatible', 'byok-y', 'nobody'] as const;

  /** A random DAG: node i may read from any node before it; some nodes are model steps. */
  const dag = fc.integer({ min: 1, max: 12 }).chain((n) =>
    fc.record({
      models: fc.array(
        fc.option(fc.record({ provider: fc.constantFrom(...providers), model: fc.constantFrom('y-research-1', 'm') })),
        {
          minLength: n,
          maxLength: n,
        },
      ),
      edges: fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: n * 2 }),
    }),
  );

  it('licence and lineage of each output match an independent reference', () => {
    fc.assert(
      fc.property(dag, ({ models, edges }) => {
        const ids = models.map((_, i) => `n${i}`);
        const links = edges.filter(([a, b]) => a < b).map(([a, b]) => ({ source: `n${a}`, target: `n${b}` }));
        const canvas: Canvas = {
          nodes: ids.map((id) => ({ id, type: 'TextEntry', label: id, config: {}, position: { x: 0, y: 0 } })),
          edges: links.map((l, i) => ({ id: `e${i}`, ...l, sourceHandle: 'out', targetHandle: 'in' })),
        };
        const stamped = new Map<string, LicenceModel>();
        models.forEach((m, i) => {
          if (m) stamped.set(`n${i}`, stampLicenceModel({ nodeId: `n${i}`, ...m, stampedAt: at }));
        });
        return ids.every((id) => {
          // Reference: walk predecessors by hand, rank commercial use by hand.
          const seen = new Set<string>();
          const visit = (node: string) => {
            if (seen.has(node)) return;
            seen.add(node);
            for (const l of links) if (l.target === node) visit(l.source);
          };
          visit(id);
          const upstream = [...seen].filter((n) => stamped.has(n)).sort();
          const ranks = upstream.map((n) => {
            const use = stamped.get(n)?.commercial_use ?? null;
            return use === 'no' ? 0 : use === null ? 1 : use === 'provider_terms' ? 2 : 3;
          });
          const expected = ranks.length
            ? (['no', 'unchecked', 'provider_terms', 'yes'] as const)[Math.min(...ranks)]
            : undefined;

          const result = provenanceFor(ancestry(canvas, id).flatMap((n) => stamped.get(n) ?? []));
          return (
            result.ai_generated === upstream.length > 0 &&
            result.licence?.commercial_use === expected &&
            JSON.stringify(result.generated_by?.map((g) => g.node_id) ?? []) === JSON.stringify(upstream)
          );
        });
      }),
    );
  });
});
