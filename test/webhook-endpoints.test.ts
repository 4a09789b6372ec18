/**
 * The rules of a team's webhook endpoints (functions/domain/webhook-endpoints.ts), without I/O:
 * which endpoint hears which event, the delivery ids, the day-long retry schedule, the signatures
 * while a rotated secret overlaps (verified with the `standardwebhooks` library), the failure streak
 * that disables an endpoint, the URLs refused at creation, and the operator event of a disable.
 */
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { operatorDetailTypes, operatorEventOf } from '../functions/domain/operator-events.ts';
import { newStandardWebhookSecret } from '../functions/domain/webhook.ts';
import {
  disableAfterFailingMs,
  endpointAttempts,
  endpointDeliveryId,
  endpointHeaders,
  endpointHears,
  endpointRetryDelaySeconds,
  isAcceptableEndpointUrl,
  signingSecrets,
  streakAfterAttempt,
} from '../functions/domain/webhook-endpoints.ts';
import { operatorImagesOf } from '../functions/store/operator-event-bus.ts';

const workflowId = '4a6f0e38-5b1d-4d2e-8f3a-1c2b3d4e5f60';

describe('which endpoint hears which event', () => {
  const run = { event: 'run.completed', workflowId, tags: ['nightly', 'eu'] };
  it('its events, then its workflows and its tags when it names them', () => {
    expect(endpointHears({ events: ['run.completed'] }, run)).toBe(true);
    expect(endpointHears({ events: ['run.failed'] }, run)).toBe(false);
    expect(endpointHears({ events: ['run.completed'], workflowIds: [workflowId] }, run)).toBe(true);
    expect(endpointHears({ events: ['run.completed'], workflowIds: ['other'] }, run)).toBe(false);
    expect(endpointHears({ events: ['run.completed'], workflowIds: [] }, run)).toBe(true);
    expect(endpointHears({ events: ['run.completed'], tags: ['eu'] }, run)).toBe(true);
    expect(endpointHears({ events: ['run.completed'], tags: ['us'] }, run)).toBe(false);
    expect(endpointHears({ events: ['run.completed'], tags: ['us'] }, { ...run, tags: [] })).toBe(false);
  });
  it('a disabled endpoint hears nothing', () => {
    expect(endpointHears({ events: ['run.completed'], disabled: true }, run)).toBe(false);
  });
});

describe('delivery ids', () => {
  it('are UUIDs in the layout of UUIDv7: the same for the same event, sorted by the event time', () => {
    const a = endpointDeliveryId(1_700_000_000_000, 'e:j:run.started');
    expect(a).toMatch(/^[\da-f]{8}-[\da-f]{4}-7[\da-f]{3}-[89ab][\da-f]{3}-[\da-f]{12}$/);
    expect(endpointDeliveryId(1_700_000_000_000, 'e:j:run.started')).toBe(a);
    expect(endpointDeliveryId(1_700_000_000_000, 'e:j:run.completed')).not.toBe(a);
    const later = endpointDeliveryId(1_700_000_000_001, 'a');
    expect(later > a).toBe(true);
  });
});

describe('the retry schedule', () => {
  it('is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: eight attempts over more than a day', () => {
    const waits = Array.from({ length: endpointAttempts }, (_, i) => endpointRetryDelaySeconds(i + 1));
    expect(waits).toEqual([5, 300, 1800, 7200, 18_000, 36_000, 36_000, undefined]);
    const total = waits.reduce<number>((sum, wait) => sum + (wait ?? 0), 0);
    expect(total).toBeGreaterThanOrEqual(24 * 3600);
    expect(total).toBe(27 * 3600 + 35 * 60 + 5);
  });
});

describe('signing while a rotated secret overlaps', () => {
  const now = new Date('2026-12-07T12:00:00.000Z');
  const current = newStandardWebhookSecret();
  const previous = newStandardWebhookSecret();
  const endpoint = { secret: current, previousSecret: previous, previousSecretUntil: '2026-12-08T12:00:00.000Z' };

  it('signs with both for 24 hours, then with the current one only', () => {
    expect(signingSecrets(endpoint, now)).toEqual([current, previous]);
    expect(signingSecrets(endpoint, new Date('2026-12-08T12:00:00.000Z'))).toEqual([current]);
    expect(signingSecrets({ secret: current }, now)).toEqual([current]);
  });

  it('gives one webhook-signature both libraries of either secret verify', () => {
    const rawBody = JSON.stringify({ event: 'run.completed', jobId: 'j' });
    const headers = endpointHeaders({
      webhookId: 'msg_1',
      event: 'run.completed',
      rawBody,
      secrets: signingSecrets(endpoint, now),
      nowSeconds: Math.floor(Date.now() / 1000),
    });
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(new Webhook(current).verify(rawBody, headers)).toEqual(JSON.parse(rawBody));
    expect(new Webhook(previous).verify(rawBody, headers)).toEqual(JSON.parse(rawBody));
    expect(() => new Webhook(newStandardWebhookSecret()).verify(rawBody, headers)).toThrow();
  });
});

describe('the failure streak', () => {
  const since = '2026-12-01T00:00:00.000Z';
  const at = (ms: number) => new Date(Date.parse(since) + ms);
  it('starts at a first failure, ends at a success, and disables after 5 days', () => {
    expect(streakAfterAttempt(false, undefined, at(0))).toEqual({ kind: 'started' });
    expect(streakAfterAttempt(false, since, at(disableAfterFailingMs - 1))).toEqual({ kind: 'none' });
    expect(streakAfterAttempt(false, since, at(disableAfterFailingMs))).toEqual({ kind: 'disable' });
    expect(streakAfterAttempt(true, since, at(disableAfterFailingMs))).toEqual({ kind: 'cleared' });
    expect(streakAfterAttempt(true, undefined, at(0))).toEqual({ kind: 'none' });
  });
});

describe('URLs an endpoint may name', () => {
  it('public https only, whatever the spelling of a private address', () => {
    expect(isAcceptableEndpointUrl('https://hooks.example.com/x?token=1')).toBe(true);
    for (const url of [
      'http://hooks.example.com/x',
      'https://user:pw@hooks.example.com/x',
      'https://10.0.0.1/x',
      'https://169.254.169.254/latest',
      'https://0x7f000001/x',
      'https://[::ffff:10.0.0.1]/x',
      'https://[fd00::1]/x',
      'https://localhost/x',
      'https://metadata.internal/x',
      'not a url',
    ]) {
      expect(isAcceptableEndpointUrl(url), url).toBe(false);
    }
  });
  it('loopback only where local development allows it', () => {
    expect(isAcceptableEndpointUrl('https://127.0.0.1:8443/hook', { allowLoopback: true })).toBe(true);
    expect(isAcceptableEndpointUrl('https://localhost:8443/hook', { allowLoopback: true })).toBe(true);
    expect(isAcceptableEndpointUrl('https://10.0.0.1/hook', { allowLoopback: true })).toBe(false);
  });
});

describe('the operator event of a disabled endpoint', () => {
  const image = {
    SK: 'WHENDPOINT#e1',
    endpointId: 'e1',
    teamId: 't1',
    url: 'https://hooks.example.com/secret-path?token=x',
    secret: 'whsec_AAAA',
    disabled: false,
  };
  it('is given by the change its failures made, and names the host, never the path or the secret', () => {
    const newImage = {
      ...image,
      disabled: true,
      disabledReason: 'failing',
      failingSince: '2026-12-01T00:00:00.000Z',
      disabledAt: '2026-12-06T00:00:00.000Z',
    };
    const event = operatorEventOf(operatorImagesOf({ oldImage: image, newImage }));
    expect(event).toEqual({
      detailType: operatorDetailTypes.webhookEndpointDisabled,
      time: '2026-12-06T00:00:00.000Z',
      detail: {
        version: 1,
        eventId: 'e1:disabled:2026-12-01T00:00:00.000Z',
        teamId: 't1',
        endpointId: 'e1',
        host: 'hooks.example.com',
        failingSince: '2026-12-01T00:00:00.000Z',
        disabledAt: '2026-12-06T00:00:00.000Z',
      },
    });
    expect(JSON.stringify(event)).not.toMatch(/secret|token|whsec/);
  });
  it('is not given by a disable the team asked for', () => {
    const newImage = { ...image, disabled: true, disabledReason: 'requested' };
    expect(operatorEventOf(operatorImagesOf({ oldImage: image, newImage }))).toBeUndefined();
  });
});
