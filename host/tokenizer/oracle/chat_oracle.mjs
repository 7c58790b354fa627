// Chat-template goldens from the reference @huggingface/jinja@0.5.11 (as transformers.js uses
// it), Date pinned to 2024-07-26 so strftime_now is reproducible.
//  - every tokenizer fetched by fetch.sh: its tokenizer_config.json chat_template with its
//    special tokens (bos_token, eos_token, pad_token, unk_token; AddedToken objects -> content)
//  - ../testdata/templates/*.jinja: small templates probing whitespace control, with
//    bos_token "<BOS>" and eos_token "<EOS>"
//  - the 17 real-model templates in the testdata of github.com/ardanlabs/jinja@v1.8.0 (read
//    from the Go module cache, not copied here), same specials plus date_string "26 Jul 2024"
// Writes ../testdata/chat_golden.json: {cases, tokenizers: {name: {case: output | {error}}},
// templates: {file: {case: output | {error}}}}. usage: node chat_oracle.mjs
import fs from "node:fs";
import { Template } from "@huggingface/jinja";
import { execSync } from "node:child_process";
import { CACHE, TOKENIZERS } from "./texts.mjs";

const cases = {
  hello: { messages: [{ role: "user", content: "Hello" }], add_generation_prompt: true },
  multi: { messages: [
      { role: "system", content: "You are a helpful assistant." },
      { role: "user", content: "What is 2+2?  " },
      { role: "assistant", content: "<think>\nadd\n</think>\n\n4" },
      { role: "user", content: "And 3+3?\n" } ], add_generation_prompt: true },
  no_gen: { messages: [{ role: "user", content: "Hello" }, { role: "assistant", content: "Hi!" }], add_generation_prompt: false },
  nothink: { messages: [{ role: "user", content: "Hello" }], add_generation_prompt: true, enable_thinking: false },
  long_user: { messages: [{ role: "user", content: "  leading and trailing spaces \n\n" + "word ".repeat(50) + "<|im_end|> literal" }], add_generation_prompt: true },
};
const RealDate = Date;
globalThis.Date = class extends RealDate {
  constructor(...a) { super(...(a.length ? a : [2024, 6, 26, 0, 0, 0])); }
  static now() { return new RealDate(2024, 6, 26).getTime(); }
};
const tokStr = (v) => (v && typeof v === "object" ? v.content : v) ?? null;
const renderAll = (src, specials) => {
  const out = {};
  let tpl;
  try { tpl = new Template(src); } catch (err) { return { _compile_error: String(err.message || err) }; }
  for (const [cn, c] of Object.entries(cases)) {
    try { out[cn] = tpl.render({ ...specials, ...c }); } catch (err) { out[cn] = { error: String(err.message || err) }; }
  }
  return out;
};
const res = { cases, tokenizers: {}, templates: {}, ardanlabs_templates: {} };
for (const name of TOKENIZERS) {
  const cfg = JSON.parse(fs.readFileSync(`${CACHE}/${name}/tokenizer_config.json`, "utf8"));
  if (typeof cfg.chat_template !== "string") { res.tokenizers[name] = { _missing: "no chat_template" }; continue; }
  const specials = {};
  for (const k of ["bos_token", "eos_token", "pad_token", "unk_token"]) if (k in cfg) specials[k] = tokStr(cfg[k]);
  res.tokenizers[name] = renderAll(cfg.chat_template, specials);
}
const tdir = new URL("../testdata/templates/", import.meta.url);
for (const f of fs.readdirSync(tdir).sort()) {
  res.templates[f] = renderAll(fs.readFileSync(new URL(f, tdir), "utf8"), { bos_token: "<BOS>", eos_token: "<EOS>" });
}
const adir = `${execSync("go env GOMODCACHE").toString().trim()}/github.com/ardanlabs/jinja@v1.8.0/testdata/templates/`;
for (const f of fs.readdirSync(adir).sort()) {
  res.ardanlabs_templates[f] = renderAll(fs.readFileSync(adir + f, "utf8"), { bos_token: "<BOS>", eos_token: "<EOS>", date_string: "26 Jul 2024" });
}
fs.writeFileSync(new URL("../testdata/chat_golden.json", import.meta.url), JSON.stringify(res, null, 1) + "\n");
for (const [g, m] of [["tokenizers", res.tokenizers], ["templates", res.templates], ["ardanlabs", res.ardanlabs_templates]])
  for (const [n, r] of Object.entries(m)) console.log(g, n.padEnd(24), Object.entries(r).map(([k, v]) => `${k}:${typeof v === "string" ? v.length : "ERR"}`).join(" "));
