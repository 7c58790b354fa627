// Generates ../testdata/texts_unicode.json: 800 short strings probing Unicode-version edges
// of normalization (NFC/NFKC tables of tokenizers are Unicode 9.0, Go's are 15.0) and of the
// regex categories (Oniguruma 16.0): marks, letters, digits and compatibility characters
// assigned after Unicode 9.0, next to old combining marks that reorder or compose with them.
// Deterministic (seeded mulberry32). usage: node gen_unicode_texts.mjs
import fs from "node:fs";
function mulberry32(a) { return function () { a |= 0; a = a + 0x6D2B79F5 | 0; let t = Math.imul(a ^ a >>> 15, 1 | a); t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t; return ((t ^ t >>> 14) >>> 0) / 4294967296; }; }
const rnd = mulberry32(20240726);
const pick = (a) => a[Math.floor(rnd() * a.length)];
const load = async (v, cat) => (await import(`@unicode/unicode-${v}/General_Category/${cat}/code-points.mjs`)).default;
const un9 = new Set(await load("9.0.0", "Unassigned"));
const newer = async (cat) => (await load("16.0.0", cat)).filter(c => un9.has(c));
const marks = [...await newer("Nonspacing_Mark"), ...await newer("Spacing_Mark"), ...await newer("Enclosing_Mark")];
const letters = [...await newer("Other_Letter"), ...await newer("Lowercase_Letter"), ...await newer("Uppercase_Letter"), ...await newer("Modifier_Letter")];
const numbers = [...await newer("Decimal_Number"), ...await newer("Other_Number")];
const symbols = [...await newer("Other_Symbol"), ...await newer("Other_Punctuation")];
// compatibility characters added after 9.0 (NFKC changes them in Go 15.0, not in tokenizers)
const compat = [0x32FF, 0x1FBF0, 0x1FBF5, 0x1FBF9, 0x10781, 0x10785, 0x1E06B, 0x1E030, 0x1E050, 0xA7F2, 0xA7F3, 0xA7F4, 0xAB69, 0x1CCD6, 0x1CCF0];
// composition pairs added after 9.0 (Dives Akuru 11935+11930 -> 11938; Tulu-Tigalari, Kirat Rai, Gurung Khema in 16.0)
const pairs = [[0x11935, 0x11930], [0x11382, 0x113C9], [0x11384, 0x113BB], [0x16D67, 0x16D67], [0x1611E, 0x1611E], [0x16121, 0x1611F]];
const oldMarks = [0x0300, 0x0301, 0x0323, 0x0327, 0x0308, 0x05B8, 0x064E, 0x0651, 0x093C, 0x0E48, 0x302A, 0x1DC0];
const bases = ["a", "e", "A", "x", "ا", "क", "ก", "ㄱ", "字", " ", "1", "'"];
const cp = (c) => String.fromCodePoint(c);
const out = [];
const add = (s) => out.push({ name: `unicode/${String(out.length).padStart(3, "0")}`, class: "unicode", text: s });
for (const c of compat) { add(cp(c)); add("x" + cp(c) + "y " + cp(c) + cp(c)); }
for (const [a, b] of pairs) { add(cp(a) + cp(b)); add("a" + cp(a) + cp(b) + cp(0x0301) + " " + cp(a) + cp(0x0323) + cp(b)); }
while (out.length < 800) {
  const n = 1 + Math.floor(rnd() * 6);
  let s = "";
  for (let k = 0; k < n; k++) {
    const r = rnd();
    if (r < 0.35) s += pick(bases) + cp(pick(marks)) + cp(pick(oldMarks));
    else if (r < 0.5) s += pick(bases) + cp(pick(oldMarks)) + cp(pick(marks)) + cp(pick(oldMarks));
    else if (r < 0.65) s += cp(pick(letters)) + cp(pick(marks));
    else if (r < 0.75) s += cp(pick(numbers)) + pick(["", "1", " 2", "x"]);
    else if (r < 0.82) s += cp(pick(symbols));
    else if (r < 0.88) s += cp(pick(compat));
    else s += pick([" ", "  ", "\n", "'s", "the ", "Ǆ", "ﬁ", "①", "é", "e\u0301"]);
  }
  add(s);
}
fs.writeFileSync(new URL("../testdata/texts_unicode.json", import.meta.url), JSON.stringify(out).replace(/\},\{/g, "},\n{") + "\n");
console.log(out.length, "texts;", marks.length, "new marks,", letters.length, "letters,", numbers.length, "numbers");
