const text = ("The quick brown fox jumps over the lazy dog. user@example.com 2026-11-30 ").repeat(500);
const emails = text.match(/[a-z]+@[a-z]+\.[a-z]+/g).length;
const dates = text.match(/\d{4}-\d{2}-\d{2}/g).length;
const words = text.replace(/\b(\w)(\w*)\b/g, (m, a, b) => a.toUpperCase() + b).length;
({ emails, dates, words })
