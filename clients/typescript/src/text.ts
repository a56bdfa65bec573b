/** The bound on every message this package composes, in UTF-16 code units (ADR 0144 D2's 2048). */
export const MAX_MESSAGE_UNITS = 2048;

/**
 * Makes text bounded and storable, as the service's spi.BoundText does: at
 * most maxUnits UTF-16 code units, cut only between characters (a surrogate
 * pair is never split), with NUL and every lone surrogate replaced by U+FFFD.
 */
export function boundText(s: string, maxUnits: number = MAX_MESSAGE_UNITS): string {
  if (maxUnits <= 0) return "";
  if (s.length <= maxUnits && !s.includes("\0") && isWellFormed(s)) return s;
  const parts: string[] = [];
  let units = 0;
  for (let i = 0; i < s.length; ) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        if (units + 2 > maxUnits) break;
        parts.push(s.slice(i, i + 2));
        units += 2;
        i += 2;
        continue;
      }
    }
    if (units + 1 > maxUnits) break;
    parts.push(c === 0 || (c >= 0xd800 && c <= 0xdfff) ? "\uFFFD" : s.charAt(i));
    units += 1;
    i += 1;
  }
  return parts.join("");
}

/** Reports whether s has no lone surrogate (so it has a UTF-8 form). */
export function isWellFormed(s: string): boolean {
  const f = (s as { isWellFormed?: () => boolean }).isWellFormed;
  if (typeof f === "function") return f.call(s);
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

/** Quotes text for a message, bounded to max units. */
export function quote(s: string, max = 64): string {
  return JSON.stringify(boundText(s, max));
}

/**
 * The length of s in UTF-8 bytes, as the service measures text it received:
 * a lone surrogate counts as the three bytes it takes there (WTF-8), as
 * U+FFFD would. Counted without encoding a copy, since a script or an input
 * may be megabytes long.
 */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) {
      n += 1;
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // a pair: four bytes for two units
      i++;
    } else {
      n += 2;
    }
  }
  return n;
}
