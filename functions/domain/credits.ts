/**
 * Money is kept as integers of hundredths of a credit (1 credit = $0.01, so 1 unit = $0.0001), so
 * sums and conditions in DynamoDB are exact. The API shows credits as numbers with at most two
 * decimals; these two functions are the only conversions.
 */

/** Parses a credit amount with at most two decimals into hundredths; throws on anything else. */
export const toHundredths = (credits: number | string): number => {
  const text = typeof credits === 'number' ? String(credits) : credits.trim();
  const match = /^(-?)(\d+)(?:\.(\d{1,2}))?$/.exec(text);
  if (!match) throw new RangeError(`Not a credit amount with at most two decimals: ${text}`);
  const [, sign, whole, fraction = ''] = match;
  const value = Number(whole) * 100 + Number(fraction.padEnd(2, '0'));
  if (!Number.isSafeInteger(value)) throw new RangeError(`Credit amount out of range: ${text}`);
  return sign === '-' ? -value : value;
};

/** Hundredths back to the credit number the API shows. */
export const toCredits = (hundredths: number): number => hundredths / 100;
