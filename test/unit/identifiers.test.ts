import { describe, expect, it } from 'vitest';
import { couldBeId, type IdKind, idForMessage, idForms, lifetimeInWords } from '../../src/domain/identifiers.js';
import { randomIds } from '../../src/ports/Ids.js';
import { simIds } from '../support/simulation/simNode.js';

const kinds = Object.keys(idForms) as IdKind[];

describe('the forms of ids and the words for a lifetime', () => {
  it('takes every id airs makes, and every form it ever made, as an id of its kind', () => {
    for (let i = 0; i < 200; i++) {
      expect(couldBeId('request', randomIds.requestId())).toBe(true);
      expect(couldBeId('account', randomIds.accountId())).toBe(true);
      expect(couldBeId('key', randomIds.keyId())).toBe(true);
    }
    // Before request ids carried their creation time (300fa9b): `req_` + 128 random bits.
    expect(couldBeId('request', 'req_4hRtm25ulmqvAiCWfMFOQw')).toBe(true);
    expect(couldBeId('request', 'req_01a200a5c501Z4hRtm25ulmqvAiCWfMFOQ')).toBe(true);
    expect(couldBeId('response', 'resp_01a200a5c501Z4hRtm25ulmqvAiCWfMFOQ')).toBe(true);
    expect(couldBeId('chatCompletion', 'chatcmpl-01a200a5c501Z4hRtm25ulmqvAiCWfMFOQ')).toBe(true);
    expect(couldBeId('batch', 'batch_01a200a5c501Z4hRtm25ulmqvAiCWfMFOQ')).toBe(true);
    expect(couldBeId('file', 'file-01a200a5c501Z4hRtm25ulmqvAiCWfMFOQ')).toBe(true);
    const sim = simIds();
    expect(couldBeId('request', sim.requestId())).toBe(true);
    expect(couldBeId('account', sim.accountId())).toBe(true);
    expect(couldBeId('key', sim.keyId())).toBe(true);
  });

  it.each([
    ['a NUL and a quote', "\u0000'"],
    ['the prefix alone', 'req_'],
    ['a body one character short', `req_${'a'.repeat(33)}`],
    ['a body one character long', `req_${'a'.repeat(35)}`],
    ['a NUL inside a body of the right length', `req_${'a'.repeat(33)}\u0000`],
    ['characters outside base64url', `req_${'a'.repeat(33)}=`],
    ['SQL', "req_' OR '1'='1' --aaaaaaaaaaaaaa"],
    ['10,000 characters', `req_${'a'.repeat(10_000)}`],
    ['letters outside ASCII', `req_${'é'.repeat(34)}`],
    ['an emoji (two UTF-16 units each)', `req_${'😀'.repeat(17)}`],
    ['another kind of id', `resp_${'a'.repeat(34)}`],
    ['the right body in another case', `REQ_${'a'.repeat(34)}`],
  ])('does not take %s as a request id', (_name, text) => {
    expect(couldBeId('request', text)).toBe(false);
  });

  it('takes no prefix for another kind', () => {
    for (const kind of kinds)
      for (const other of kinds) {
        const { prefix, lengths } = idForms[other];
        expect(couldBeId(kind, `${prefix}${'a'.repeat(lengths[0])}`)).toBe(kind === other);
      }
  });

  it('cuts an id in a message to 100 characters and marks the cut', () => {
    expect(idForMessage('req_abc')).toBe('req_abc');
    expect(idForMessage('y'.repeat(5_000))).toBe(`${'y'.repeat(100)}…`);
  });

  it.each([
    [86_400, '24 hours'],
    [3_600, '1 hour'],
    [7 * 86_400, '7 days'],
    [120, '2 minutes'],
    [90, '90 seconds'],
    [1, '1 second'],
  ])('says %i seconds as "%s"', (seconds, words) => {
    expect(lifetimeInWords(seconds)).toBe(words);
  });
});
