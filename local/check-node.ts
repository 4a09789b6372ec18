// Runs before `npm start` and `npm test`. With Node 20 (the machine's own) Node cannot run the
// TypeScript sources, and this line would not even parse type annotations; so it is plain JS.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(
    `This project runs on Node 24, but ${process.version} is first on the PATH.\n` +
      'The node@24 devDependency provides it inside npm scripts: run `npm ci` (without --ignore-scripts),\n' +
      'and always go through npm (npm start, npm test, npx ...), never ./node_modules/.bin directly.',
  );
  process.exit(1);
}
