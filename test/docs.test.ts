/**
 * The repository stands on its own and its documentation tells the truth about it: nothing points
 * outside the repository, every relative link leads somewhere, the access patterns table names
 * exactly the key prefixes `functions/store/keys.ts` builds, the README's layout table and the
 * architecture's layer table match the folders, and every test that needs the emulators runs in
 * the integration project.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { integrationTests } from '../vitest.config.ts';

const root = path.resolve(import.meta.dirname, '..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const trackedFiles = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
  .split('\0')
  .filter((file) => file && existsSync(path.join(root, file)));
const markdownFiles = trackedFiles.filter((file) => file.endsWith('.md'));

/** The rows of the first table after `heading`, as arrays of cell texts. */
const tableAfter = (markdown: string, heading: string): string[][] => {
  const lines = markdown
    .slice(markdown.indexOf(`\n${heading}\n`))
    .split('\n')
    .slice(1);
  const start = lines.findIndex((line) => line.startsWith('|'));
  const end = lines.findIndex((line, i) => i > start && !line.startsWith('|'));
  return lines.slice(start + 2, end).map((line) =>
    line
      .replace(/^\||\|$/g, '')
      .split(' | ')
      .map((cell) => cell.trim()),
  );
};

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');

describe('a self-contained repository', () => {
  it('has no tracked file that reads or links the folder beside it', () => {
    const outside = ['..', 'shared'].join('/');
    const mentions = trackedFiles.filter((file) => {
      const text = readFileSync(path.join(root, file), 'utf8');
      return text.includes(outside) || /shared\/(spec|DESIGN)/.test(text);
    });
    expect(mentions).toEqual([]);
  });

  it('says what a rule is, never which tracker item it came from (no "issue N" or "#N" in code, docs or served text)', () => {
    // A third party's own tracker (a link to its issue, or owner/repo#N) is a source, not ours; a
    // markdown link to a numbered heading (`#5-the-prod-stage`) is no tracker item either.
    const tracker = ['issue', 's? ?#?\\d+\\b'].join('');
    const bare = ['(?<![\\w/.&-])#', '\\d+\\b(?![-\\w])'].join('');
    const ours = new RegExp(`\\b${tracker}|${bare}`, 'i');
    const found = trackedFiles
      .filter((file) => file !== 'package-lock.json')
      .flatMap((file) =>
        readFileSync(path.join(root, file), 'utf8')
          .split('\n')
          .map((line, index) => ({ file, line: index + 1, text: line }))
          .filter(({ text }) => ours.test(text) && !/github\.com|discussions\//.test(text)),
      )
      .map(({ file, line }) => `${file}:${line}`);
    expect(found).toEqual([]);
  });

  it('has every relative link of its markdown lead to a file that exists, and to a heading in it', () => {
    expect(markdownFiles).toEqual(expect.arrayContaining(['README.md', 'docs/api.md', 'docs/architecture.md']));
    const broken: string[] = [];
    for (const file of markdownFiles) {
      for (const [, target = ''] of read(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target)) continue;
        const [linkPath = '', anchor] = target.split('#');
        const resolved = linkPath ? path.join(path.dirname(file), linkPath) : file;
        if (!existsSync(path.join(root, resolved))) {
          broken.push(`${file}: ${target}`);
          continue;
        }
        if (anchor && resolved.endsWith('.md')) {
          const headings = [...read(resolved).matchAll(/^#+ (.+)$/gm)].map(([, text = '']) => anchorOf(text));
          if (!headings.includes(anchor)) broken.push(`${file}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('names only files and folders of the repository that exist', () => {
    const missing = markdownFiles.flatMap((file) =>
      [...read(file).matchAll(/`((?:functions|platform|lib|local|schemas|bench|test|packages|docs)\/[\w./-]*)`/g)]
        .map(([, named = '']) => named)
        // A hidden folder (`bench/.out/`) is generated, not tracked.
        .filter((named) => !named.split('/').some((part) => part.startsWith('.')))
        .filter((named) => !existsSync(path.join(root, named)))
        .map((named) => `${file}: ${named}`),
    );
    expect(missing).toEqual([]);
  });

  it('keeps the README a front door, under 12 KB', () => {
    expect(statSync(path.join(root, 'README.md')).size).toBeLessThan(12 * 1024);
  });
});

describe('the access patterns table', () => {
  /** Every upper-case word of a key that `keys.ts` writes in a string or template literal. */
  const keyPrefixes = () => {
    const code = read('functions/store/keys.ts')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/\/\/.*$/gm, '');
    const literals = [...code.matchAll(/'([^']*)'|`([^`]*)`/g)].map(([, quoted, template]) =>
      (quoted ?? template ?? '').replace(/\$\{[^}]*\}/g, '#'),
    );
    return new Set(literals.flatMap((literal) => literal.split('#').filter((part) => /^[A-Z][A-Z0-9]*$/.test(part))));
  };

  /** Every upper-case word in the code spans of the table's key column, attribute names aside. */
  const tablePrefixes = () => {
    const rows = tableAfter(read('docs/architecture.md'), '### Access patterns');
    const spans = rows.flatMap(([, key = '']) => [...key.matchAll(/`([^`]*)`/g)].map(([, span = '']) => span));
    const words = spans.flatMap((span) => span.replace(/<[^>]*>/g, '').match(/\b[A-Z][A-Z0-9]*\b/g) ?? []);
    return new Set(words.filter((word) => !/^(PK|SK|GSI\d+(PK|SK))$/.test(word)));
  };

  it('reads the prefixes keys.ts builds, the newer ones included', () => {
    expect([...keyPrefixes()]).toEqual(
      expect.arrayContaining([
        'TEAM',
        'APIKEY',
        'RUN',
        'STEP',
        'DEFERRED',
        'KEYSPEND',
        'IDEM',
        'QUEUEDRUNS',
        'WEBHOOK',
      ]),
    );
  });

  it('names every key prefix keys.ts builds, and none it does not', () => {
    expect([...tablePrefixes()].sort()).toEqual([...keyPrefixes()].sort());
  });
});

describe("the README's layout table", () => {
  const listed = tableAfter(read('README.md'), '## Layout').map(([folder = '']) =>
    folder.replaceAll('`', '').replace(/\/$/, ''),
  );
  const directories = (dir: string) =>
    readdirSync(path.join(root, dir), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && trackedFiles.some((file) => file.startsWith(`${dir}${entry.name}/`)))
      .map((entry) => `${dir}${entry.name}`);

  it('names folders that exist', () => {
    for (const folder of listed) expect(existsSync(path.join(root, folder)), folder).toBe(true);
  });

  it('names every top-level folder, every folder under functions/ and every package', () => {
    const expected = [
      ...directories('').filter((dir) => !dir.startsWith('.') && dir !== 'functions' && dir !== 'packages'),
      ...directories('functions/'),
      ...directories('packages/'),
    ];
    expect([...listed].sort()).toEqual(expected.sort());
  });
});

describe("docs/architecture.md's layer table", () => {
  // A cell may name several folders (`functions/api/`, `functions/workers/`) or a file (`functions/deps.ts`).
  const listed = tableAfter(read('docs/architecture.md'), '## Layers').flatMap(([cell = '']) =>
    [...cell.matchAll(/`([^`]+)`/g)].map(([, name = '']) => name.replace(/\/$/, '')),
  );
  /** The folders whose code runs in a function: each under functions/, the schemas, the platform data. */
  const runtimeFolders = [
    ...readdirSync(path.join(root, 'functions'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `functions/${entry.name}`),
    'schemas',
    'platform',
  ];

  it('names only folders and files that exist', () => {
    expect(listed.length).toBeGreaterThan(10);
    expect(listed.filter((name) => !existsSync(path.join(root, name)))).toEqual([]);
  });

  it('names every runtime folder, and the CDK app', () => {
    expect([...runtimeFolders, 'lib'].filter((folder) => !listed.includes(folder))).toEqual([]);
  });
});

describe('the test projects', () => {
  const testFiles = readdirSync(path.join(root, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => `test/${file}`);
  const isIntegration = (file: string) => path.matchesGlob(file, integrationTests);
  const needsEmulators = (file: string) => /support\/(stack|runs)\.ts|\binject\(|local\/start\.ts/.test(read(file));

  it('names every test file that needs the emulators or starts the stack as an integration test', () => {
    expect(testFiles.filter((file) => needsEmulators(file) && !isIntegration(file))).toEqual([]);
  });

  it('names as integration tests only files that need the emulators or start the stack', () => {
    expect(testFiles.filter(isIntegration).length).toBeGreaterThan(0);
    expect(testFiles.filter((file) => isIntegration(file) && !needsEmulators(file))).toEqual([]);
  });
});
