import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { forbiddenReason, isForbiddenAddress, parseHostLiteral } from '../functions/domain/address-guard.ts';
import {
  addressRefusedMessage,
  GuardedFetchError,
  type ResolvedAddress,
} from '../functions/http-client/address-vet.ts';
import { guardedFetch } from '../functions/http-client/guarded-fetch.ts';
import { loopbackServer } from './support/loopback-server.ts';
import { rejectionOf } from './support/rejection.ts';

describe('isForbiddenAddress', () => {
  it.each([
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.0.1', 'link_local'],
    ['169.254.169.254', 'metadata'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.192', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['febf:ffff::1', 'link_local'],
    ['fc00::1', 'unique_local'],
    ['fdff:1234::5', 'unique_local'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['ff0e::1', 'multicast'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::10.0.0.1', 'private'],
    ['::8.8.8.8', 'reserved'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['2002:0a00:0001::1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['2001:db8::1', 'reserved'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
    ['100::1', 'reserved'],
    ['fec0::1', 'private'],
    ['not-an-ip', 'invalid'],
  ])('refuses %s (%s)', (ip, reason) => {
    expect(forbiddenReason(ip)).toBe(reason);
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.15.255.255',
    '172.32.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '169.253.255.255',
    '192.169.0.1',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:0808:0808::1',
  ])('allows the public address %s', (ip) => {
    expect(forbiddenReason(ip)).toBeNull();
  });

  const octet = fc.integer({ min: 0, max: 255 });
  const v4Of = (a: number, b: number, c: number, d: number) => `${a}.${b}.${c}.${d}`;

  it('refuses every address of the private, loopback, link-local, CGNAT and multicast blocks (property)', () => {
    const blocks = [
      fc.tuple(fc.constant(10), octet, octet, octet),
      fc.tuple(fc.constant(127), octet, octet, octet),
      fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), octet, octet),
      fc.tuple(fc.constant(192), fc.constant(168), octet, octet),
      fc.tuple(fc.constant(169), fc.constant(254), octet, octet),
      fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), octet, octet),
      fc.tuple(fc.integer({ min: 224, max: 255 }), octet, octet, octet),
      fc.tuple(fc.constant(0), octet, octet, octet),
    ];
    fc.assert(
      fc.property(fc.oneof(...blocks), ([a, b, c, d]) => {
        const ip = v4Of(a, b, c, d);
        const hex = (x: number) => x.toString(16).padStart(2, '0');
        const mapped = `::ffff:${hex(a)}${hex(b)}:${hex(c)}${hex(d)}`;
        const nat64 = `64:ff9b::${ip}`;
        return (
          isForbiddenAddress(ip) &&
          isForbiddenAddress(`::ffff:${ip}`) &&
          isForbiddenAddress(mapped) &&
          isForbiddenAddress(nat64) &&
          isForbiddenAddress(String((a * 2 ** 24 + b * 2 ** 16 + c * 256 + d) >>> 0))
        );
      }),
    );
  });

  it('judges an IPv4 address and its IPv4-mapped and NAT64 forms alike (property)', () => {
    fc.assert(
      fc.property(octet, octet, octet, octet, (a, b, c, d) => {
        const ip = v4Of(a, b, c, d);
        const plain = isForbiddenAddress(ip);
        return isForbiddenAddress(`::ffff:${ip}`) === plain && isForbiddenAddress(`64:ff9b::${ip}`) === plain;
      }),
    );
  });

  it('allows only global unicast IPv6 (property: anything outside 2000::/3 is refused)', () => {
    const group = fc.integer({ min: 0, max: 0xffff });
    fc.assert(
      fc.property(fc.array(group, { minLength: 8, maxLength: 8 }), (groups) => {
        const ip = groups.map((g) => g.toString(16)).join(':');
        const first = groups[0] ?? 0;
        const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
        return (first & 0xe000) === 0x2000 || first === 0x64 || mapped || isForbiddenAddress(ip);
      }),
    );
  });
});

describe('parseHostLiteral', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['127.0.1', '127.0.0.1'],
    ['0x7F.0.0.01', '127.0.0.1'],
    ['10.0.0.1.', '10.0.0.1'],
    ['017700000001', '127.0.0.1'],
    ['0', '0.0.0.0'],
    ['169.254.43518', '169.254.169.254'],
    ['[::1]', '::1'],
    ['[0:0:0:0:0:0:0:1]', '::1'],
    ['[::ffff:127.0.0.1]', '::ffff:7f00:1'],
    ['[FE80::1%25eth0]', 'fe80::1'],
    ['2001:DB8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
  ])('reads %s as %s', (host, address) => {
    expect(parseHostLiteral(host)?.address).toBe(address);
  });

  it.each(['example.com', 'localhost', '1.2.3.4.5', '256.1.1.1', '08.1.1.1', '0x1g', '', '1..2', '[not:ip]'])(
    'finds no IP literal in %s',
    (host) => {
      expect(parseHostLiteral(host)).toBeNull();
    },
  );

  it('every spelling of a loopback or private address is refused (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(127, 10), fc.integer({ min: 0, max: 2 ** 24 - 1 }), (first, rest) => {
        const value = first * 2 ** 24 + rest;
        const spellings = [
          String(value),
          `0x${value.toString(16)}`,
          `0${value.toString(8)}`,
          `${first}.${rest}`,
          `0${first.toString(8)}.${rest >>> 16}.${rest & 0xffff}`,
        ];
        return spellings.every((s) => {
          const parsed = parseHostLiteral(s);
          return parsed !== null && isForbiddenAddress(parsed.address);
        });
      }),
    );
  });

  it('agrees with the URL parser on IPv4 spellings (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.constantFrom(10, 16, 8), (value, radix) => {
        const spelled =
          radix === 16 ? `0x${value.toString(16)}` : radix === 8 ? `0${value.toString(8)}` : String(value);
        return parseHostLiteral(spelled)?.address === new URL(`http://${spelled}/`).hostname;
      }),
    );
  });
});

describe('guardedFetch', () => {
  const server = loopbackServer((req, res) => {
    if (req.url === '/redirect') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' }).end();
    } else if (req.url === '/big') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(64 * 1024, 7));
    } else if (req.url === '/slow') {
      setTimeout(() => res.writeHead(200).end('late'), 2_000).unref();
    } else {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ method: req.method, body, host: req.headers.host }));
      });
    }
  });

  const local = { allowLoopback: true, timeoutMs: 1_000, maxBytes: 1024 };

  const refusal = async (promise: Promise<unknown>): Promise<string> => {
    const error = await rejectionOf(promise, 'a refusal');
    expect(error).toBeInstanceOf(GuardedFetchError);
    return (error as GuardedFetchError).code;
  };

  it('reaches a loopback server only when loopback is allowed', async () => {
    const response = await guardedFetch(`${server.url}/echo`, { method: 'POST', body: 'hi' }, local);
    expect(response.status).toBe(200);
    expect(response.json()).toMatchObject({ method: 'POST', body: 'hi' });
    expect(await refusal(guardedFetch(`${server.url}/echo`, {}, { ...local, allowLoopback: false }))).toBe(
      'address_refused',
    );
  });

  it('refuses encoded and IPv6 spellings of loopback without the switch', async () => {
    const { port } = server;
    for (const host of ['2130706433', '0x7f.1', '0177.0.0.1', '127.1', '[::1]', '[::ffff:127.0.0.1]']) {
      const options = { ...local, allowLoopback: false };
      expect(await refusal(guardedFetch(`https://${host}:${port}/`, {}, options))).toBe('address_refused');
    }
  });

  it('refuses non-http schemes, and plain http to public hosts', async () => {
    expect(await refusal(guardedFetch('file:///etc/passwd', {}, local))).toBe('forbidden_scheme');
    expect(await refusal(guardedFetch('ftp://example.com/', {}, local))).toBe('forbidden_scheme');
    const resolve = async () => [{ address: '93.184.216.34', family: 4 as const }];
    expect(await refusal(guardedFetch('http://example.com/', {}, { ...local, resolve }))).toBe('forbidden_scheme');
  });

  it('refuses a name when ANY of its addresses is forbidden', async () => {
    const resolve = async () => [
      { address: '93.184.216.34', family: 4 as const },
      { address: '10.0.0.7', family: 4 as const },
    ];
    expect(await refusal(guardedFetch('https://rebind.example/', {}, { ...local, resolve }))).toBe('address_refused');
    const metadata = async () => [{ address: 'fd00:ec2::254', family: 6 as const }];
    expect(await refusal(guardedFetch('https://meta.example/', {}, { ...local, resolve: metadata }))).toBe(
      'address_refused',
    );
  });

  it('connects to the vetted address, not to a second DNS answer', async () => {
    const { port } = server;
    let calls = 0;
    const resolve = async () => {
      calls++;
      return [{ address: '127.0.0.1', family: 4 as const }];
    };
    const response = await guardedFetch(`http://pinned.test:${port}/echo`, {}, { ...local, resolve });
    expect(response.address).toBe('127.0.0.1');
    expect(response.json()).toMatchObject({ host: `pinned.test:${port}` });
    expect(calls).toBe(1);
  });

  it('does not follow redirects', async () => {
    const response = await guardedFetch(`${server.url}/redirect`, {}, local);
    expect(response.status).toBe(302);
    expect(response.headers.location).toContain('169.254.169.254');
  });

  it('caps the body: fails past maxBytes, or truncates when asked', async () => {
    expect(await refusal(guardedFetch(`${server.url}/big`, {}, local))).toBe('too_large');
    const cut = await guardedFetch(`${server.url}/big`, {}, { ...local, truncate: true });
    expect(cut.body.byteLength).toBe(1024);
    expect(cut.truncated).toBe(true);
  });

  it('times out', async () => {
    const started = Date.now();
    expect(await refusal(guardedFetch(`${server.url}/slow`, {}, { ...local, timeoutMs: 200 }))).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('every refused address reads the same to the caller (no oracle of how names resolve); the reason is in detail only', async () => {
    const answers: Record<string, ResolvedAddress[] | Error> = {
      'private.example': [{ address: '10.0.0.7', family: 4 }],
      'meta.example': [{ address: '169.254.169.254', family: 4 }],
      'loop.example': [{ address: '127.0.0.1', family: 4 }],
      'empty.example': [],
      'nowhere.example': new Error('getaddrinfo ENOTFOUND nowhere.example'),
    };
    const resolve = async (host: string) => {
      const answer = answers[host];
      if (answer instanceof Error || answer === undefined) throw answer ?? new Error('unknown');
      return answer;
    };
    const seen = new Map<string, { code: string; message: string; detail: string | undefined }>();
    for (const url of [
      ...Object.keys(answers).map((h) => `https://${h}/`),
      'https://10.1.2.3/',
      'https://[fd00:ec2::254]/',
    ]) {
      try {
        await guardedFetch(url, {}, { ...local, allowLoopback: false, resolve });
        throw new Error(`${url} was not refused`);
      } catch (error) {
        const { code, message, detail } = error as GuardedFetchError;
        seen.set(url, { code, message, detail });
      }
    }
    const outward = new Set([...seen.values()].map(({ code, message }) => `${code}: ${message}`));
    expect([...outward]).toEqual([`address_refused: ${addressRefusedMessage}`]);
    expect(addressRefusedMessage).not.toMatch(/private|metadata|loopback|resolve[sd] to|dns/i);
    // The logs still say why.
    expect(seen.get('https://private.example/')?.detail).toBe('private.example resolves to 10.0.0.7 (private)');
    expect(seen.get('https://meta.example/')?.detail).toBe('meta.example resolves to 169.254.169.254 (metadata)');
    expect(seen.get('https://nowhere.example/')?.detail).toMatch(/^nowhere\.example did not resolve: .*ENOTFOUND/);
  });

  it('reports an unresolvable name', async () => {
    const resolve = async () => {
      throw new Error('ENOTFOUND');
    };
    expect(await refusal(guardedFetch('https://nowhere.invalid/', {}, { ...local, resolve }))).toBe('address_refused');
  });
});
