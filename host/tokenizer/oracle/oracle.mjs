// Token-id goldens from the reference: Hugging Face tokenizers 0.23.2 (the Rust library via
// its napi binding, npm `tokenizers`), for every text of ../testdata/texts.json and
// ../testdata/texts_fuzz2.json, on the tokenizer files fetched by fetch.sh.
// Writes ../testdata/golden/<name>.jsonl: a header line
//   {"tokenizer", "source", "oracle", "vocab_size", "sp_before", "sp_after"}
// then one line per text:
//   {"name", "ids"}                  ids with add_special_tokens=false (main corpus)
//   {"name", "n", "sha256"}          long and fuzz2 texts: id count and SHA-256 of the ids
//                                    written as decimal joined by ","
//   "dec" / "dec_sha256"             decode(ids, skip_special=false), only when != text
//   "dec_skip" / "dec_skip_sha256"   decode(ids, true), only when != decode(ids, false)
// ids with add_special_tokens=true are sp_before + ids + sp_after (checked here for every text).
// The 256 rows of the project corpus (corpus/prompts.jsonl, if present) follow as
//   {"name": "corpus/<id>", "text_sha256", "n", "sha256", ...}; text_sha256 detects a changed row.
// A final line {"windows": [{ids, dec}]} holds 500 decodes of 1..8-id windows of the mixed
// long text (cut UTF-8 sequences and byte-fallback runs).
// Names are the fetched tokenizers and the variants of variants.json.
// usage: node oracle.mjs [name ...]   (after ./fetch.sh --oracle)
import fs from "node:fs";
import crypto from "node:crypto";
import { createRequire } from "node:module";
import { expandText, readCorpus, loadTokenizerJSON, CACHE, TOKENIZERS, VARIANTS } from "./texts.mjs";
const require = createRequire(import.meta.url);
const { Tokenizer } = require("tokenizers");

const names = process.argv.length > 2 ? process.argv.slice(2) : [...TOKENIZERS, ...Object.keys(VARIANTS)];
const main = readCorpus("texts.json"), fuzz2 = readCorpus("texts_fuzz2.json"), uni = readCorpus("texts_unicode.json");
const corpusURL = new URL("../../../corpus/prompts.jsonl", import.meta.url);
const corpus = fs.existsSync(corpusURL) ? fs.readFileSync(corpusURL, "utf8").split("\n").filter(Boolean).map(l => JSON.parse(l))
  .map(r => ({ name: `corpus/${r.id}`, class: "corpus", text: r.text })) : [];
const sha = (ids) => crypto.createHash("sha256").update(ids.join(",")).digest("hex");
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
fs.mkdirSync(new URL("../testdata/golden/", import.meta.url), { recursive: true });

for (const name of names) {
  const base = VARIANTS[name] ? VARIANTS[name].base : name;
  const tok = Tokenizer.fromString(loadTokenizerJSON(name));
  let source = fs.readFileSync(`${CACHE}/${base}/SOURCE`, "utf8").trim();
  if (VARIANTS[name]) source += ` with variants.json[${name}]`;
  // post-processor tokens: encode("") with specials
  const e0 = Array.from((await tok.encode("", null, { addSpecialTokens: true })).getIds());
  const probe = Array.from((await tok.encode("a", null, { addSpecialTokens: false })).getIds());
  const probeSp = Array.from((await tok.encode("a", null, { addSpecialTokens: true })).getIds());
  const at = probeSp.findIndex((_, i) => same(probeSp.slice(i, i + probe.length), probe));
  const spBefore = probeSp.slice(0, at), spAfter = probeSp.slice(at + probe.length);
  if (!same(e0, [...spBefore, ...spAfter])) throw new Error(`${name}: cannot infer post-processor tokens`);
  const lines = [JSON.stringify({ tokenizer: name, source, oracle: "tokenizers@0.23.2", vocab_size: tok.getVocabSize(true), sp_before: spBefore, sp_after: spAfter })];
  let n = 0;
  for (const t of [...main, ...uni, ...fuzz2, ...corpus]) {
    const text = expandText(t);
    const ids = Array.from((await tok.encode(text, null, { addSpecialTokens: false })).getIds());
    const idsSp = Array.from((await tok.encode(text, null, { addSpecialTokens: true })).getIds());
    if (!same(idsSp, [...spBefore, ...ids, ...spAfter])) throw new Error(`${name} ${t.name}: add_special_tokens is not before+ids+after`);
    const dec = await tok.decode(ids, false), decSkip = await tok.decode(ids, true);
    const hashed = t.class === "long" || t.class === "fuzz2" || t.class === "corpus";
    const o = { name: t.name };
    if (t.class === "corpus") o.text_sha256 = crypto.createHash("sha256").update(text).digest("hex");
    if (hashed) { o.n = ids.length; o.sha256 = sha(ids); } else o.ids = ids;
    if (dec !== text) { if (hashed) o.dec_sha256 = crypto.createHash("sha256").update(dec).digest("hex"); else o.dec = dec; }
    if (decSkip !== dec) { if (hashed) o.dec_skip_sha256 = crypto.createHash("sha256").update(decSkip).digest("hex"); else o.dec_skip = decSkip; }
    lines.push(JSON.stringify(o));
    n++;
  }
  // windows of consecutive ids of the mixed long text
  const mixed = expandText(main.find(t => t.name === "long/mixed_200k"));
  const src = Array.from((await tok.encode(mixed, null, { addSpecialTokens: false })).getIds());
  let seed = 42; const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const windows = [];
  for (let i = 0; i < 500; i++) {
    const a = Math.floor(rnd() * (src.length - 10)), ids = src.slice(a, a + 1 + Math.floor(rnd() * 8));
    windows.push({ ids, dec: await tok.decode(ids, false) });
  }
  lines.push(JSON.stringify({ windows }));
  fs.writeFileSync(new URL(`../testdata/golden/${name}.jsonl`, import.meta.url), lines.join("\n") + "\n");
  console.log(`${name}: ${n} texts, sp_before=${JSON.stringify(spBefore)} sp_after=${JSON.stringify(spAfter)}`);
}
