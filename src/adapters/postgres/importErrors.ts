/** What `airs migrate` throws when it copies nothing: a target not empty, a damaged source, a copy that differs. */

/** The target is not empty: nothing was written. */
export class TargetNotEmpty extends Error {
  override name = 'TargetNotEmpty';
}

/** The source cannot be copied as it is (its log does not fold, or its records differ from its log). */
export class SourceDamaged extends Error {
  override name = 'SourceDamaged';
}

/** The copy did not verify (a bug of this code, or a log the machine does not accept): nothing was committed. */
export class CopyDiffers extends Error {
  override name = 'CopyDiffers';
}
