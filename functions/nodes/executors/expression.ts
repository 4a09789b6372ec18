/**
 * A safe arithmetic evaluator for MathOperator (never `eval`): numbers, variables, + - * / % ^,
 * unary minus, parentheses, comparisons (1 or 0), and a fixed set of functions and constants.
 * Recursive descent over a token list; depth and length are bounded.
 */

export class ExpressionError extends Error {
  override readonly name = 'ExpressionError';
}

const functions: Readonly<Record<string, (...args: number[]) => number>> = {
  abs: Math.abs,
  ceil: Math.ceil,
  floor: Math.floor,
  round: Math.round,
  trunc: Math.trunc,
  sign: Math.sign,
  sqrt: Math.sqrt,
  cbrt: Math.cbrt,
  exp: Math.exp,
  log: Math.log,
  log2: Math.log2,
  log10: Math.log10,
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  asin: Math.asin,
  acos: Math.acos,
  atan: Math.atan,
  atan2: Math.atan2,
  pow: Math.pow,
  hypot: Math.hypot,
  min: (...a) => (a.length ? Math.min(...a) : Number.NaN),
  max: (...a) => (a.length ? Math.max(...a) : Number.NaN),
  sum: (...a) => a.reduce((s, x) => s + x, 0),
  avg: (...a) => (a.length ? a.reduce((s, x) => s + x, 0) / a.length : Number.NaN),
  clamp: (x, lo, hi) => Math.min(Math.max(x ?? Number.NaN, lo ?? Number.NaN), hi ?? Number.NaN),
};
const constants: Readonly<Record<string, number>> = { pi: Math.PI, e: Math.E };

const tokenPattern =
  /\s*(?:(\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|<=|>=|==|!=|[-+*/%^(),<>]))/y;

const tokenize = (source: string): string[] => {
  const tokens: string[] = [];
  tokenPattern.lastIndex = 0;
  while (tokenPattern.lastIndex < source.length) {
    const at = tokenPattern.lastIndex;
    const match = tokenPattern.exec(source);
    if (!match) {
      if (source.slice(at).trim() === '') break;
      throw new ExpressionError(`Unexpected character at ${at + 1}: ${source.slice(at).trim().charAt(0)}`);
    }
    tokens.push((match[1] ?? match[2] ?? match[3]) as string);
  }
  return tokens;
};

/** Evaluates `source` with `variables`; throws ExpressionError on a syntax error or unknown name. */
export const evaluate = (source: string, variables: Readonly<Record<string, number>>): number => {
  if (source.length > 1000) throw new ExpressionError('Expression longer than 1000 characters');
  const tokens = tokenize(source);
  let pos = 0;
  let depth = 0;
  const peek = () => tokens[pos];
  const take = (expected?: string) => {
    const token = tokens[pos];
    if (token === undefined || (expected !== undefined && token !== expected)) {
      throw new ExpressionError(expected ? `Expected "${expected}"` : 'Unexpected end of expression');
    }
    pos++;
    return token;
  };
  const binary = (next: () => number, ops: Record<string, (a: number, b: number) => number>) => (): number => {
    let left = next();
    for (let op = peek(); op !== undefined && Object.hasOwn(ops, op); op = peek()) {
      take();
      left = (ops[op] as (a: number, b: number) => number)(left, next());
    }
    return left;
  };
  const primary = (): number => {
    if (++depth > 100) throw new ExpressionError('Expression nested too deeply');
    try {
      const token = take();
      if (token === '(') {
        const value = comparison();
        take(')');
        return value;
      }
      if (token === '-') return -power();
      if (token === '+') return power();
      if (/^[\d.]/.test(token)) return Number(token);
      if (/^[A-Za-z_]/.test(token)) {
        if (peek() === '(') {
          const fn = Object.hasOwn(functions, token) ? functions[token] : undefined;
          if (!fn) throw new ExpressionError(`Unknown function ${token}`);
          take('(');
          const args: number[] = [];
          if (peek() !== ')') {
            args.push(comparison());
            while (peek() === ',') {
              take(',');
              args.push(comparison());
            }
          }
          take(')');
          return fn(...args);
        }
        if (Object.hasOwn(variables, token)) return variables[token] as number;
        if (Object.hasOwn(constants, token)) return constants[token] as number;
        throw new ExpressionError(`Unknown name ${token}`);
      }
      throw new ExpressionError(`Unexpected "${token}"`);
    } finally {
      depth--;
    }
  };
  // ^ and ** are right-associative and bind tighter than unary minus on their left operand.
  const power = (): number => {
    const base = primary();
    const op = peek();
    if (op === '^' || op === '**') {
      take();
      return base ** power();
    }
    return base;
  };
  const term = binary(power, { '*': (a, b) => a * b, '/': (a, b) => a / b, '%': (a, b) => a % b });
  const sum = binary(term, { '+': (a, b) => a + b, '-': (a, b) => a - b });
  const comparison = binary(sum, {
    '<': (a, b) => Number(a < b),
    '<=': (a, b) => Number(a <= b),
    '>': (a, b) => Number(a > b),
    '>=': (a, b) => Number(a >= b),
    '==': (a, b) => Number(a === b),
    '!=': (a, b) => Number(a !== b),
  });
  if (tokens.length === 0) throw new ExpressionError('Empty expression');
  const result = comparison();
  if (pos < tokens.length) throw new ExpressionError(`Unexpected "${tokens[pos]}"`);
  return result;
};
