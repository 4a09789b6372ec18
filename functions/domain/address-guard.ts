/**
 * Which network addresses the service may call on a user's behalf (callback URLs, node HTTP calls;
 * DESIGN section 7). Pure: no DNS, no sockets. `guardedFetch` resolves names and asks here about
 * every address it gets back.
 *
 * IPv6 is an allow-list: only global unicast (2000::/3) outside the reserved and tunnelling blocks
 * passes, and addresses that embed an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by
 * that IPv4 address.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** Why an address is refused. */
export type ForbiddenReason =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'multicast'
  | 'broadcast'
  | 'metadata'
  | 'unique_local'
  | 'reserved'
  | 'invalid';

/** An IP literal as numbers: 4 bytes (IPv4) or 8 groups of 16 bits (IPv6). */
export interface ParsedAddress {
  family: 4 | 6;
  /** Canonical text: dotted quad, or RFC 5952 IPv6 (lower case, longest zero run as `::`). */
  address: string;
}

// A block is [first address as number, prefix length].
type V4Block = readonly [number, number, ForbiddenReason];

const v4 = (text: string): number => {
  const parts = text.split('.').map(Number);
  return (((parts[0] ?? 0) << 24) | ((parts[1] ?? 0) << 16) | ((parts[2] ?? 0) << 8) | (parts[3] ?? 0)) >>> 0;
};

/** Most specific first: the first block that contains the address gives the reason. */
const v4Blocks: readonly V4Block[] = [
  [v4('169.254.169.254'), 32, 'metadata'],
  [v4('255.255.255.255'), 32, 'broadcast'],
  [v4('0.0.0.0'), 8, 'unspecified'],
  [v4('10.0.0.0'), 8, 'private'],
  [v4('100.64.0.0'), 10, 'cgnat'],
  [v4('127.0.0.0'), 8, 'loopback'],
  [v4('169.254.0.0'), 16, 'link_local'],
  [v4('172.16.0.0'), 12, 'private'],
  [v4('192.0.0.0'), 24, 'reserved'], // IETF protocol assignments (incl. 192.0.0.192, a cloud metadata address)
  [v4('192.0.2.0'), 24, 'reserved'], // documentation
  [v4('192.88.99.0'), 24, 'reserved'], // 6to4 relay anycast
  [v4('192.168.0.0'), 16, 'private'],
  [v4('198.18.0.0'), 15, 'reserved'], // benchmarking
  [v4('198.51.100.0'), 24, 'reserved'], // documentation
  [v4('203.0.113.0'), 24, 'reserved'], // documentation
  [v4('224.0.0.0'), 4, 'multicast'],
  [v4('240.0.0.0'), 4, 'reserved'],
];

const inV4Block = (value: number, base: number, prefix: number): boolean =>
  prefix === 0 || value >>> (32 - prefix) === base >>> (32 - prefix);

const classifyV4 = (value: number): ForbiddenReason | null => {
  for (const [base, prefix, reason] of v4Blocks) if (inV4Block(value, base, prefix)) return reason;
  return null;
};

const v4Text = (value: number): string =>
  [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');

/** The 8 groups of an IPv6 address written in any valid form (zone id removed), or null. */
const v6Groups = (text: string): number[] | null => {
  const address = text.split('%')[0] ?? '';
  if (!isIPv6(address)) return null;
  let head = address;
  const tail: number[] = [];
  const lastColon = address.lastIndexOf(':');
  const last = address.slice(lastColon + 1);
  if (last.includes('.')) {
    const value = v4(last);
    tail.push(value >>> 16, value & 0xffff);
    head = address.slice(0, lastColon + 1);
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const [left = '', right] = head.split('::');
  const leftGroups = parse(left);
  const rightGroups = [...(right === undefined ? [] : parse(right)), ...tail];
  if (right === undefined) return [...leftGroups, ...tail];
  const zeros = 8 - leftGroups.length - rightGroups.length;
  return [...leftGroups, ...new Array<number>(zeros).fill(0), ...rightGroups];
};

const v6Text = (groups: readonly number[]): string => {
  // RFC 5952: the longest run of two or more zero groups becomes `::` (the first such run on a tie).
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
};

const embeddedV4 = (groups: readonly number[], index: number): number =>
  (((groups[index] ?? 0) << 16) | (groups[index + 1] ?? 0)) >>> 0;

const classifyV6 = (g: readonly number[]): ForbiddenReason | null => {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const firstSix = [g0, g1, g2, g3, g4, g5];
  if (firstSix.every((x) => x === 0)) {
    if (g6 === 0 && g7 === 0) return 'unspecified';
    if (g6 === 0 && g7 === 1) return 'loopback';
    return classifyV4(embeddedV4(g, 6)) ?? 'reserved'; // IPv4-compatible (deprecated): refuse always
  }
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) {
    return classifyV4(embeddedV4(g, 6)); // IPv4-mapped ::ffff:a.b.c.d
  }
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0xffff && g5 === 0) {
    return classifyV4(embeddedV4(g, 6)) ?? 'reserved'; // IPv4-translated ::ffff:0:a.b.c.d
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return classifyV4(embeddedV4(g, 6)); // NAT64 well-known prefix 64:ff9b::/96
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return 'reserved'; // local-use NAT64 64:ff9b:1::/48
  if (g0 === 0x2002) return classifyV4(embeddedV4(g, 1)); // 6to4 2002:a.b.c.d::/48
  if (g0 === 0xfd00 && g1 === 0x0ec2 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && g6 === 0 && g7 === 0x254) {
    return 'metadata'; // fd00:ec2::254, the instance metadata service over IPv6
  }
  if ((g0 & 0xfe00) === 0xfc00) return 'unique_local'; // fc00::/7
  if ((g0 & 0xffc0) === 0xfe80) return 'link_local'; // fe80::/10
  if ((g0 & 0xffc0) === 0xfec0) return 'private'; // fec0::/10, deprecated site-local
  if ((g0 & 0xff00) === 0xff00) return 'multicast'; // ff00::/8
  if (g0 === 0x2001 && g1 === 0) return 'reserved'; // Teredo 2001::/32 (hides an IPv4 address)
  if (g0 === 0x2001 && g1 === 0x0db8) return 'reserved'; // documentation 2001:db8::/32
  if (g0 === 0x2001 && (g1 & 0xfff0) === 0x0010) return 'reserved'; // ORCHID 2001:10::/28
  if (g0 === 0x2001 && (g1 & 0xfff0) === 0x0020) return 'reserved'; // ORCHIDv2 2001:20::/28
  if (g0 === 0x3fff && (g1 & 0xf000) === 0) return 'reserved'; // documentation 3fff::/20
  if ((g0 & 0xe000) !== 0x2000) return 'reserved'; // outside global unicast 2000::/3 (incl. 100::/64)
  return null;
};

/** Parses one IPv4 part as inet_aton does: decimal, octal (leading 0) or hex (0x). */
const v4Part = (part: string): number | null => {
  if (/^0x[0-9a-f]*$/i.test(part)) return part.length === 2 ? 0 : Number.parseInt(part.slice(2), 16);
  if (/^0[0-7]*$/.test(part)) return Number.parseInt(part, 8);
  if (/^[1-9][0-9]*$/.test(part)) return Number(part);
  return null;
};

/** IPv4 in any of the forms inet_aton and URL parsers accept: `2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`. */
const parseV4Loose = (host: string): number | null => {
  const parts = host.split('.');
  if (parts.length > 4 || parts.some((p) => p === '')) return null;
  const values = parts.map(v4Part);
  if (values.some((v) => v === null || v > 0xffffffff)) return null;
  const nums = values as number[];
  const lastIndex = nums.length - 1;
  let result = 0;
  for (let i = 0; i < lastIndex; i++) {
    const value = nums[i] ?? 0;
    if (value > 255) return null;
    result += value * 256 ** (3 - i);
  }
  const last = nums[lastIndex] ?? 0;
  if (last >= 256 ** (4 - lastIndex)) return null;
  return result + last;
};

/**
 * The IP address a URL host names literally, in canonical form, or null when the host is a DNS
 * name. Accepts bracketed IPv6 (`[::1]`, with a zone `[fe80::1%25eth0]`), plain IPv6, and every
 * IPv4 spelling (decimal, octal, hex, short forms, one trailing dot).
 */
export const parseHostLiteral = (host: string): ParsedAddress | null => {
  let text = host.trim().toLowerCase();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1).replace('%25', '%');
  if (text.includes(':')) {
    const groups = v6Groups(text);
    return groups ? { family: 6, address: v6Text(groups) } : null;
  }
  if (text.endsWith('.')) text = text.slice(0, -1);
  const value = parseV4Loose(text);
  return value === null ? null : { family: 4, address: v4Text(value) };
};

/** Why the service must not connect to `ip`, or null when it may. Text that is no IP address is `invalid`. */
export const forbiddenReason = (ip: string): ForbiddenReason | null => {
  if (isIPv4(ip)) return classifyV4(v4(ip));
  const parsed = parseHostLiteral(ip);
  if (!parsed) return 'invalid';
  if (parsed.family === 4) return classifyV4(v4(parsed.address));
  const groups = v6Groups(parsed.address);
  return groups ? classifyV6(groups) : 'invalid';
};

/** Whether the service must refuse to connect to `ip` (any non-public address; see `forbiddenReason`). */
export const isForbiddenAddress = (ip: string): boolean => forbiddenReason(ip) !== null;
