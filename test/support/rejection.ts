/** The error `promise` rejects with; the test fails where it resolves instead. */
export const rejectionOf = async (promise: Promise<unknown>, expected = 'a rejection'): Promise<unknown> => {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error(`expected ${expected}`);
};
