// Shared helpers of the oracle scripts: reading the test corpora.
import fs from "node:fs";

// expandText returns the text of a corpus entry; long texts are stored as a recipe
// {repeat, min_utf16}: repeat concatenated until the UTF-16 length reaches min_utf16.
export function expandText(t) {
  if (t.text !== undefined) return t.text;
  let s = "";
  while (s.length < t.min_utf16) s += t.repeat;
  return s;
}

export function readCorpus(name) {
  return JSON.parse(fs.readFileSync(new URL(`../testdata/${name}`, import.meta.url), "utf8"));
}

export const CACHE = process.env.GENLOAD_TOKENIZER_CACHE || `${process.env.HOME}/.cache/genload/tokenizers`;
export const TOKENIZERS = ["llama3", "llama3_1", "qwen3", "deepseek_v3", "gptoss", "gemma3", "llama2"];
export const VARIANTS = JSON.parse(fs.readFileSync(new URL("./variants.json", import.meta.url), "utf8"));
delete VARIANTS._comment;

// loadTokenizerJSON returns the tokenizer.json text of a fetched tokenizer or of a variant.
export function loadTokenizerJSON(name) {
  const v = VARIANTS[name];
  const base = fs.readFileSync(`${CACHE}/${v ? v.base : name}/tokenizer.json`, "utf8");
  if (!v) return base;
  const j = JSON.parse(base);
  Object.assign(j, v.set);
  return JSON.stringify(j);
}
