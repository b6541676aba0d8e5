/** A table of strings kept once each, found by index: how request columns hold strings that repeat. */

/** Each string once, at the index it was first given: `keep` gives a string's index (-1 for none), `text` it back. */
export const createStringTable = () => {
  const table: string[] = [];
  const indexOf = new Map<string, number>();
  const intern = (text: string | undefined): number => {
    if (text === undefined) return -1;
    let index = indexOf.get(text);
    if (index === undefined) {
      index = table.length;
      table.push(text);
      indexOf.set(text, index);
    }
    return index;
  };
  /** The index of `text`, reusing `current` (the slot's index so far, or the index last stored in this column) when
   * the text is the same: a string compare instead of a map lookup, as accounts, keys and models repeat. */
  const keep = (current: number, text: string | undefined): number =>
    current >= 0 && text === table[current] ? current : intern(text);
  /** The string at `index`, undefined for -1. */
  const text = (index: number) => (index >= 0 ? table[index] : undefined);
  return { table, keep, text };
};
