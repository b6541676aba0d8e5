import { type UsageKey, usageHourMs } from '../domain/usage/hourlyUsage.js';
import { firstHourOf, pageGatherer, type UsageAsk, type UsagePage } from '../domain/usage/usagePage.js';
import type { ReadModel } from '../ports/Store.js';
import { maxUsageRowsPerRead } from '../storage/hourlyUsage.js';

/** The last hour a page may read when its ask has no end: `limit` buckets can never reach past this (an open end is
 * read until the page is full or the rows end). */
const farFuture = 8_640_000_000_000_000;

/**
 * One page of the usage API (contract 21: OpenAI's `/v1/organization/usage/completions` shape) from the hourly usage
 * view: reads rows from the page's first bucket in reads of `maxUsageRowsPerRead`, until the page holds `limit`
 * buckets with use and has seen a row of the next one (then `has_more`, and `next_page` names it), or the rows end.
 * The rows a page reads are those of its buckets and one more: bounded by the data in `limit` buckets.
 */
export const usagePage = async (reads: Pick<ReadModel, 'usageRows'>, ask: UsageAsk): Promise<UsagePage> => {
  const gatherer = pageGatherer(ask);
  const fromHour = firstHourOf(ask);
  // Rows of the hour that starts at `endMs` or later are outside; an end within an hour keeps that hour's row.
  const toHour = ask.endMs === undefined ? farFuture : Math.ceil(ask.endMs / usageHourMs) * usageHourMs;
  let after: UsageKey | undefined;
  for (;;) {
    const rows = await reads.usageRows({ fromHour, toHour, after, limit: maxUsageRowsPerRead });
    for (const row of rows) if (!gatherer.add(row)) return gatherer.page();
    if (rows.length < maxUsageRowsPerRead) return gatherer.page();
    after = rows.at(-1);
  }
};
