import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from './support/stack.ts';

/**
 * The API reference page (GET /docs) in a real browser: Debian's chromium, driven by playwright-core
 * (which never downloads a browser of its own). CI installs chromium in `.ci/run`; without it this
 * file fails, it does not skip.
 */

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const screenshotPath = path.resolve(import.meta.dirname, '..', 'test-artifacts', 'docs-page.png');

/** As the machine notes prescribe: no sandbox as root, no GPU, and no background calls to Google. */
const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

interface Operation {
  method: string;
  path: string;
  operationId: string;
}

type OpenApiOperations = Record<string, Partial<Record<(typeof httpMethods)[number], { operationId?: string }>>>;

interface OpenApiDocument {
  info?: { title?: string };
  paths?: OpenApiOperations;
  webhooks?: OpenApiOperations;
}

/** Every operation of the document: paths, then webhooks (keyed by webhook name, as Swagger UI shows them). */
const operationsOf = (doc: OpenApiDocument): Operation[] =>
  [doc.paths ?? {}, doc.webhooks ?? {}].flatMap((items) =>
    Object.entries(items).flatMap(([itemPath, item]) =>
      httpMethods.flatMap((method) => {
        const operationId = item[method]?.operationId;
        return operationId ? [{ method: method.toUpperCase(), path: itemPath, operationId }] : [];
      }),
    ),
  );

let stack: TestStack;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(chromiumPath)) {
    throw new Error(
      `Chromium not found at ${chromiumPath}. The API reference page test needs Debian's chromium: ` +
        '`apt-get update && apt-get install -y --no-install-recommends chromium` (.ci/run installs it when missing), ' +
        'or set CHROMIUM_PATH.',
    );
  }
  stack = await startTestStack();
  browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs });
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

describe('GET /docs', () => {
  it('serves the page without a key, with a strict Content-Security-Policy', async () => {
    const response = await fetch(`${stack.baseUrl}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
    const html = await response.text();
    expect(html).toContain('data-openapi-url="./openapi.json"');
    // Nothing inline for the CSP to allow: every script has a src, there is no <style> element.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style/);
    expect(html).not.toMatch(/\/\/[a-z0-9.-]+\.[a-z]{2,}\//i);
  });

  it('serves the renderer from the service itself, compressed as the browser accepts, cacheable', async () => {
    const html = await (await fetch(`${stack.baseUrl}/docs`)).text();
    const hrefs = [...html.matchAll(/(?:src|href)="\.\/(docs\/assets\/[^"]+)"/g)].map((m) => m[1] ?? '');
    expect(hrefs.map((href) => href.replace(/\?.*$/, '')).sort()).toEqual([
      'docs/assets/docs.js',
      'docs/assets/swagger-ui-bundle.js',
      'docs/assets/swagger-ui.css',
    ]);
    for (const href of hrefs) {
      for (const encoding of ['br', 'gzip', 'identity']) {
        const response = await fetch(`${stack.baseUrl}/${href}`, { headers: { 'accept-encoding': encoding } });
        expect(response.status, href).toBe(200);
        expect(response.headers.get('content-encoding') ?? 'identity', href).toBe(encoding);
        expect(response.headers.get('cache-control'), href).toBe('public, max-age=31536000, immutable');
        expect(response.headers.get('content-type'), href).toMatch(
          href.includes('.css') ? /^text\/css/ : /^text\/javascript/,
        );
        expect((await response.text()).length, href).toBeGreaterThan(href.includes('docs.js') ? 100 : 100_000);
      }
    }
    const bundle = `${stack.baseUrl}/${hrefs.find((href) => href.includes('swagger-ui-bundle'))}`;
    const etag = (await fetch(bundle)).headers.get('etag') ?? '';
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect((await fetch(bundle, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const unknown = await fetch(`${stack.baseUrl}/docs/assets/package.json`);
    expect(unknown.status).toBe(404);
  });

  it('renders every operation of the OpenAPI document in headless Chromium, offline', {
    timeout: 180_000,
  }, async () => {
    const doc = (await (await fetch(`${stack.baseUrl}/openapi.json`)).json()) as OpenApiDocument;
    const expected = operationsOf(doc);
    expect(expected.length).toBeGreaterThan(8);

    const origin = new URL(stack.baseUrl).origin;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      // The page must work offline: answer anything beyond the service's own origin with a network error.
      const offOrigin: string[] = [];
      await context.route(
        (url) => url.origin !== origin && url.protocol !== 'data:',
        (route) => {
          offOrigin.push(route.request().url());
          return route.abort('internetdisconnected');
        },
      );
      // Collects the page's CSP violations (the tests are typed without the DOM library, hence a string).
      await context.addInitScript({
        content:
          'window.cspViolations = [];' +
          "document.addEventListener('securitypolicyviolation', (e) => " +
          "window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));",
      });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
      });
      page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()}`));

      const response = await page.goto(`${stack.baseUrl}/docs`, { waitUntil: 'load' });
      expect(response?.status()).toBe(200);
      // A locator wait, not waitForFunction: a string predicate is compiled inside the page, which the
      // page's own CSP (no 'unsafe-eval') refuses, so it only passed when the page rendered first.
      await page
        .locator('.opblock')
        .nth(expected.length - 1)
        .waitFor({ timeout: 120_000 });

      const rendered = await page.$$eval('.opblock', (blocks) =>
        blocks.map((block) => ({
          method: block.querySelector('.opblock-summary-method')?.textContent?.trim() ?? '',
          path:
            block.querySelector('.opblock-summary-path')?.getAttribute('data-path') ??
            block.querySelector('.opblock-summary-path')?.textContent?.trim() ??
            '',
          operationId: block.querySelector('.opblock-summary-operation-id')?.textContent?.trim() ?? '',
        })),
      );
      for (const operation of expected) {
        expect(rendered, `${operation.method} ${operation.path}`).toContainEqual(operation);
      }
      expect(await page.title()).toBe('Workflow Run API reference');
      await expect
        .poll(() => page.locator('.info .title').first().textContent())
        .toContain(doc.info?.title ?? 'Workflow Run API');

      // Interactive: opening an operation shows its parameters and responses.
      const listWorkflows = page.locator('.opblock', {
        has: page.locator('.opblock-summary-operation-id', { hasText: /^ListWorkflows$/ }),
      });
      await listWorkflows.locator('.opblock-summary').first().click();
      await expect.poll(() => listWorkflows.locator('.responses-wrapper').count()).toBeGreaterThan(0);
      await listWorkflows.locator('.opblock-summary').first().click();

      await page.evaluate('document.activeElement?.blur()');
      mkdirSync(path.dirname(screenshotPath), { recursive: true });
      await page.screenshot({ path: screenshotPath, fullPage: true });

      expect(await page.evaluate('window.cspViolations')).toEqual([]);
      expect(problems).toEqual([]);
      expect(offOrigin).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
