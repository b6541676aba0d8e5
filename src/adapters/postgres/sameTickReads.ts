/**
 * One read for the keys asked in the same tick: the callers each ask for one key, and one statement reads them all
 * (a claim starts a dozen attempts at once, and each reads its request: one statement, not a dozen). `readAll` answers
 * in the order of the keys it is given; its failure is each caller's.
 */
export const sameTickReads = <T>(
  readAll: (keys: readonly string[]) => Promise<readonly (T | undefined)[]>,
): ((key: string) => Promise<T | undefined>) => {
  type Asked = { key: string; resolve: (value: T | undefined) => void; reject: (error: unknown) => void };
  let asked: Asked[] = [];
  const readAsked = () => {
    const these = asked;
    asked = [];
    readAll(these.map((one) => one.key)).then(
      (values) => {
        for (const [i, one] of these.entries()) one.resolve(values[i]);
      },
      (error: unknown) => {
        for (const one of these) one.reject(error);
      },
    );
  };
  return (key) =>
    new Promise<T | undefined>((resolve, reject) => {
      if (asked.length === 0) process.nextTick(readAsked);
      asked.push({ key, resolve, reject });
    });
};
