/**
 * A bounded cache in two generations of at most `maxEntries / 2` entries: when the young one is full it becomes the
 * old one and the previous old one is dropped. Every operation is O(1). (A single Map used as an LRU, with
 * delete-then-set and "drop the first key", slowed every write as deleted slots piled up at its front.) An entry
 * lives at least one generation; the most recently set value of a key is the one read.
 */
export const createTwoGenerationCache = <V>(maxEntries: number) => {
  const generationSize = Math.max(1, Math.floor(maxEntries / 2));
  let young = new Map<string, V>();
  let old = new Map<string, V>();
  return {
    get: (key: string): V | undefined => young.get(key) ?? old.get(key),
    set(key: string, value: V): void {
      if (young.size >= generationSize && !young.has(key)) {
        old = young;
        young = new Map();
      }
      young.set(key, value);
    },
    delete(key: string): void {
      young.delete(key);
      old.delete(key);
    },
    clear(): void {
      young = new Map();
      old = new Map();
    },
  };
};
