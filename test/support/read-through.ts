/**
 * An object that reads through to what `started` returns: a file declares a server or stack it starts
 * in `beforeAll` once at its top, and a test that reads it earlier fails saying so.
 */
export const readThrough = <T extends object>(started: () => T | undefined, what: string): T =>
  new Proxy({} as T, {
    get: (_target, key) => {
      const value = started();
      if (!value) throw new Error(`${what} is started before the tests (beforeAll)`);
      return Reflect.get(value, key);
    },
  });
