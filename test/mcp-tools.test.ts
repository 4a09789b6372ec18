/**
 * The MCP server's tools as data (functions/domain/mcp-tools.ts), without I/O: tool names, the
 * description's price and licence, and a Run's outputs as MCP content.
 */
import { describe, expect, it } from 'vitest';
import {
  getRunToolName,
  runToolResult,
  workflowOfToolName,
  workflowToolDescription,
  workflowToolName,
} from '../functions/domain/mcp-tools.ts';
import type { Run } from '../schemas/runs.ts';

const id = '3f2a9c1e-7b4d-4e8a-9c2b-1d0e5f6a7b8c';

describe('tool names', () => {
  it('names a workflow by its id, inside the MCP rules and the model APIs’ stricter ones, and reads it back', () => {
    const name = workflowToolName(id);
    expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(workflowOfToolName(name)).toBe(id);
    expect(getRunToolName).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it('reads no workflow in any other name', () => {
    for (const name of [getRunToolName, 'run_', 'run_not-a-uuid', id, `run_${id.toUpperCase()}`, `run_${id}x`])
      expect(workflowOfToolName(name), name).toBeUndefined();
  });
});

describe('the description', () => {
  const facts = { workflowId: id, name: 'Poster', description: 'Makes a poster.' };
  it('states the price range in credits and the licence', () => {
    const text = workflowToolDescription({
      ...facts,
      price: { minHundredths: 150, maxHundredths: 1200 },
      licence: {
        commercial_use: 'provider_terms',
        models: [
          {
            node_id: 'image',
            provider_key: 'bedrock',
            model: 'amazon.nova-canvas-v1:0',
            licence: null,
            licence_url: null,
            commercial_use: 'provider_terms',
            terms_url: null,
            stamped_at: '2026-12-07T00:00:00.000Z',
          },
        ],
      },
    });
    expect(text).toContain('Makes a poster.');
    expect(text).toContain('1.50 to 12.00 credits');
    expect(text).toContain('commercial use provider_terms (strictest of bedrock/amazon.nova-canvas-v1:0)');
  });

  it('states one price when the modes agree, and that no model licence applies without a model step', () => {
    const text = workflowToolDescription({
      ...facts,
      price: { minHundredths: 3, maxHundredths: 3 },
      licence: undefined,
    });
    expect(text).toContain('estimated 0.03 credits,');
    expect(text).toContain('no AI model step');
  });
});

describe('a run as content', () => {
  const file = {
    availability: 'ready',
    url: 'https://api.example.com/api/v1/file-links/abc?exp=1&sig=x',
    contentType: 'image/png',
    bytes: 1234,
    expiresAt: '2026-12-07T02:00:00.000Z',
    aiMark: null,
  } as const;
  const run = (status: Run['status'], output: Run['output']): Run => ({
    jobId: id,
    status,
    progress: status === 'completed' ? 100 : 40,
    steps: [],
    output,
  });

  it('gives text as text, each ready file as a resource link with its licence, anything else as JSON', () => {
    const result = runToolResult(
      run('completed', [
        { node_id: 'caption', step_type: 'TextConsole', result: 'a red barn', ai_generated: false },
        { node_id: 'image', step_type: 'ImageGen', result: { image: file, other: [file] }, ai_generated: true },
        { node_id: 'count', step_type: 'JsonLoader', result: { n: 3 }, ai_generated: false },
        {
          node_id: 'late',
          step_type: 'ImageGen',
          result: { ...file, availability: 'processing', url: null, bytes: null, expiresAt: null },
          ai_generated: true,
        } as never,
      ]),
    );
    const [summary, ...blocks] = result.content;
    expect(JSON.parse((summary as { text: string }).text)).toMatchObject({ jobId: id, status: 'completed' });
    expect(JSON.parse((summary as { text: string }).text)).not.toHaveProperty('next');
    expect(blocks).toEqual([
      { type: 'text', text: 'a red barn' },
      expect.objectContaining({ type: 'resource_link', uri: file.url, name: 'image-1', mimeType: 'image/png' }),
      expect.objectContaining({ type: 'resource_link', uri: file.url, name: 'image-2' }),
      { type: 'text', text: '{"n":3}' },
      { type: 'text', text: expect.stringContaining('"availability":"processing"') },
    ]);
    expect((blocks[1] as { description: string }).description).toContain('licence: no AI model step');
    expect(result.structuredContent).toMatchObject({ jobId: id });
  });

  it('says how to read on while the run goes on', () => {
    const { content } = runToolResult(run('processing', []));
    expect(content).toHaveLength(1);
    expect(JSON.parse((content[0] as { text: string }).text)).toMatchObject({
      status: 'processing',
      progress: 40,
      next: expect.stringContaining(getRunToolName),
    });
  });
});
