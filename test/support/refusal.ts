/** The error `call` rejects with; fails the test when it resolves instead. */
export async function refusal(call: () => Promise<unknown>): Promise<Error> {
  try {
    await call();
  } catch (error) {
    return error as Error;
  }
  throw new Error('the call was not refused');
}
