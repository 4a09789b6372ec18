/**
 * The network wall of a Python run's process: the child starts in a network namespace of its own,
 * which has no interface but a loopback that is down, so no socket it opens reaches anything, the
 * machine's loopback services included (locally DynamoDB Local and the other emulators, which check
 * no credentials; on Lambda the runtime API). Node 24's permission model has no network rule, so this
 * is the operating system's: util-linux `unshare --net`, run as root (or with CAP_SYS_ADMIN) as it
 * is, or inside a new user namespace (`--user --map-root-user`) where unprivileged ones are allowed.
 * Lambda allows neither: there the function's isolated VPC is the wall (docs/decisions.md).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Where the runner finds `unshare` (the child's environment is empty, so never from PATH). */
const unshareCandidates = ['/usr/bin/unshare', '/bin/unshare'];
/** The two ways, tried in order: as root; in a user namespace of its own. */
const ways = [['--net'], ['--user', '--map-root-user', '--net']];

/** The command line a child is started under (`[]`: none), or why there is none. */
export type NetworkWall = { prefix: string[] } | { unavailable: string };

let namespaceWay: NetworkWall | undefined;

/**
 * Finds, once per process, the first way this machine lets a child start in a network namespace of
 * its own, by starting `node --version` that way.
 */
export const networkNamespace = (): NetworkWall => {
  if (namespaceWay) return namespaceWay;
  const unshare = unshareCandidates.find((path) => existsSync(path));
  if (!unshare) {
    namespaceWay = { unavailable: 'util-linux `unshare` is not installed' };
    return namespaceWay;
  }
  for (const way of ways) {
    const probe = spawnSync(unshare, [...way, '--', process.execPath, '--version'], {
      env: {},
      stdio: 'ignore',
      timeout: 10_000,
    });
    if (probe.status === 0) {
      namespaceWay = { prefix: [unshare, ...way, '--'] };
      return namespaceWay;
    }
  }
  namespaceWay = {
    unavailable: 'this machine lets no process create a network namespace (neither as root nor in a user namespace)',
  };
  return namespaceWay;
};

/**
 * Whether a run may go ahead without the namespace: `required` (the default) refuses to run Python
 * without it; `optional` runs it in the machine's network, for the deployed function (its isolated VPC
 * has no route anywhere) or a developer's machine that cannot make namespaces, knowingly.
 */
export type NetworkNamespaceMode = 'required' | 'optional';
