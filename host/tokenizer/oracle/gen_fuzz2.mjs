// Generates ../testdata/texts_fuzz2.json: 3000 strings mixing words of the main corpus with
// random code points from planes 0-2 (no surrogates), to probe Unicode-table and
// regex-semantics differences (\p{L}, \p{N}, \p{M}, \s, case folding). Deterministic
// (seeded mulberry32). Adapted from the tokenizer study. usage: node gen_fuzz2.mjs
import fs from "node:fs";
import { readCorpus } from "./texts.mjs";
function mulberry32(a) { return function () { a |= 0; a = a + 0x6D2B79F5 | 0; let t = Math.imul(a ^ a >>> 15, 1 | a); t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t; return ((t ^ t >>> 14) >>> 0) / 4294967296; }; }
const rnd = mulberry32(987654);
const base = readCorpus("texts.json").filter(t => t.class !== "long");
const words = base.flatMap(t => t.text.split(/(?<=\s)|(?=\s)/u)).filter(Boolean);
const randCp = () => {
  for (;;) {
    const r = rnd();
    const cp = r < 0.6 ? Math.floor(rnd() * 0x3000) : r < 0.9 ? Math.floor(rnd() * 0x10000) : 0x10000 + Math.floor(rnd() * 0x20000);
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    return String.fromCodePoint(cp);
  }
};
const out = [];
for (let i = 0; i < 3000; i++) {
  const n = 1 + Math.floor(rnd() * 40);
  let s = "";
  for (let k = 0; k < n; k++) {
    const r = rnd();
    s += r < 0.45 ? words[Math.floor(rnd() * words.length)] : r < 0.8 ? randCp() : r < 0.9 ? " ".repeat(1 + Math.floor(rnd() * 4)) : ["\n", "\t", "'", "'s", "'LL", "0", "12", "  \n", "\r\n"][Math.floor(rnd() * 9)];
  }
  out.push({ name: `fuzz2/${String(i).padStart(4, "0")}`, class: "fuzz2", text: s });
}
fs.writeFileSync(new URL("../testdata/texts_fuzz2.json", import.meta.url), JSON.stringify(out).replace(/\},\{/g, "},\n{") + "\n");
console.log(out.length, "texts,", out.reduce((a, t) => a + t.text.length, 0), "UTF-16 units");
