/** The channel of changes every node LISTENs on, and the payloads sent on it. */

/** The channel every node LISTENs on; each commit that appends events NOTIFYs it. */
export const changesChannel = 'airs_changes';
/** The payload on that channel of an ask to reload the config (`airs models reload`); a commit's is its last seq. */
export const reloadAskedPayload = 'reload-asked';
