/**
 * The file link's operation (our design): every file `url` of a run, in its body or its webhook's,
 * is this route. It needs no key; what it answers is a redirect, so it has no answer schema.
 */
import type { OperationSpec } from './openapi-parts.ts';

export const fileLinkOperations: OperationSpec[] = [
  {
    operationId: 'GetFileLink',
    tag: 'Runs',
    summary: "Follow a run's file link",
    description:
      'Every file `url` in a run (Get a run, Cancel a run, the webhook body) is a link of this form, ready to use ' +
      "as given: no key, so a webhook receiver can fetch it. It works until the file object's `expiresAt`, two " +
      'hours after the read that gave it, and answers a redirect to the file in storage; that URL works 5 minutes, ' +
      'so follow the redirect at once rather than keeping it. Read the run again for a fresh link.',
    parameters: [
      {
        name: 'object',
        in: 'path',
        required: true,
        description: 'The file, as the link names it.',
        schema: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' },
      },
      {
        name: 'exp',
        in: 'query',
        required: true,
        description: "The link's end, as the link gives it.",
        schema: { type: 'string' },
      },
      {
        name: 'sig',
        in: 'query',
        required: true,
        description: "The link's signature, as the link gives it.",
        schema: { type: 'string' },
      },
    ],
    responses: {
      302: {
        description:
          'Found: `Location` is a storage URL of the file, valid 5 minutes (`Cache-Control: no-store`). A file ' +
          'deleted since (its run past retention) answers storage’s 403 (access denied) there.',
        headers: {
          Location: { description: 'Where the file is.', required: true, schema: { type: 'string', format: 'uri' } },
        },
      },
    },
    errorWords: {
      404: 'The link is not one this API gave, was altered, or has passed its `expiresAt`: all alike.',
    },
  },
];
