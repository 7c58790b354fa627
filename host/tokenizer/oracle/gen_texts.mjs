// Generates ../testdata/texts.json, the main test corpus of host/tokenizer (adapted from the
// tokenizer study): [{name, class, text}] for short texts, and for the two long texts
// {name, class, repeat, min_utf16}: `repeat` concatenated until the UTF-16 length (JS
// String.length) reaches min_utf16. Deterministic (seeded mulberry32).
// usage: node gen_texts.mjs
import fs from "node:fs";
const T = [];
const add = (cls, name, text) => T.push({ name: `${cls}/${name}`, class: cls, text });

// english
add("english", "para1", "The quick brown fox jumps over the lazy dog. It wasn't the first time; they'd done it before, and they'll do it again. Isn't that what we're all doing?");
add("english", "para2", "In 1969, Neil Armstrong became the first person to walk on the Moon. He famously said: \"That's one small step for [a] man, one giant leap for mankind.\" The mission, Apollo 11, launched from Kennedy Space Center on July 16.");
add("english", "para3", "Tokenization is the process of splitting text into smaller units called tokens. Modern LLMs use byte-level BPE (Byte Pair Encoding), which guarantees that any string—even one with typos like 'teh' or 'recieve'—can be encoded.\n\nSecond paragraph here. HELLO WORLD! CamelCaseIdentifiers and snake_case_names, ALLCAPS, MiXeD cAsE.");
add("english", "contractions", "I'M sure YOU'LL see it's THEY'RE and WE'VE; don't, can't, won't, shouldn't've, y'all'd've. 'quoted' ''double single''");
add("english", "accents", "Café naïve résumé coöperate façade jalapeño Zürich São Paulo Ångström œuvre Ærø ﬁne ligature, ｆｕｌｌｗｉｄｔｈ, e\u0301 (combining acute), Å vs A\u030A.");

// code
add("code", "python", "def fib(n: int) -> int:\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n\nif __name__ == \"__main__\":\n    print([fib(i) for i in range(10)])  # [0, 1, 1, 2, ...]\n");
add("code", "c", "#include <stdio.h>\n\nint main(int argc, char **argv) {\n\tfor (int i = 0; i < argc; ++i) {\n\t\tprintf(\"%d: %s\\n\", i, argv[i]);\n\t}\n\treturn 0;\n}\n");
add("code", "json", JSON.stringify({ model: "qwen3", messages: [{ role: "user", content: "Hi!" }], temperature: 0.7, max_tokens: 1024, stop: ["<|im_end|>", "\n\n"], nested: { a: [1, 2, 3], b: null, c: true } }, null, 2));
add("code", "go", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tm := map[string]int{\"a\": 1}\n\tif v, ok := m[\"a\"]; ok && v != 0 {\n\t\tfmt.Printf(\"%v\\n\", v)\n\t}\n}\n");
add("code", "html_regex", "<div class=\"x\">&nbsp;&lt;tag&gt;</div> /^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)@example\\.com$/i ==> !== && || ->> :: ... ;;; /// \\\\ ");

// numbers
add("numbers", "digits", "1234567890 12345678901234567890 3.14159265358979323846 -0.000001 1e-10 6.022e23 1,000,000 $1,234.56 100% 2024-01-15T12:34:56Z 0xDEADBEEF 0b1010 ١٢٣٤ ٣.١٤ ⅔ ² ³ ½ ①②③ 𝟙𝟚𝟛");
add("numbers", "phone_ip", "Call +1 (555) 123-4567 or 192.168.100.254:8080; IPv6 2001:0db8:85a3::8a2e:0370:7334. Order #000123456789.");
add("numbers", "longnum", "9".repeat(50) + " " + "1234567890".repeat(8));

// cjk
add("cjk", "chinese", "我们今天去公园散步，天气非常好。人工智能正在改变世界，大型语言模型（LLM）可以理解和生成自然语言。");
add("cjk", "japanese", "こんにちは、世界！今日はいい天気ですね。カタカナとひらがなと漢字を混ぜた文章です。東京タワーは３３３メートルです。");
add("cjk", "korean", "안녕하세요, 세계! 오늘 날씨가 정말 좋네요. 한국어 토크나이저 테스트입니다.");
add("cjk", "mixed", "Qwen3是阿里巴巴开发的LLM，支持128K上下文。価格は¥1,000です。한국어와 English를 섞어서 써요.");

// arabic / rtl / other scripts
add("arabic", "arabic", "مرحبا بالعالم! اللغة العربية جميلة جداً. هذا اختبار للمُرَمِّز (tokenizer) مع أرقام ١٢٣ و 456.");
add("arabic", "hebrew_hindi_thai", "שלום עולם. नमस्ते दुनिया, यह एक परीक्षण है। สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง Привет, мир! Γειά σου Κόσμε.");

// emoji
add("emoji", "emoji", "Hello 👋 world 🌍! Family: 👨‍👩‍👧‍👦, flags: 🇺🇸🇯🇵🇩🇪, skin tones: 👍🏽👍🏿, keycap: 1️⃣ #️⃣, hearts: ❤️🧡💛💚💙💜🖤🤍, 🤖🚀🔥💯.");
add("emoji", "emoji_dense", "😀😃😄😁😆😅😂🤣🥲☺️😊😇🙂🙃😉😌😍🥰😘😗😙😚😋😛😝😜🤪🤨🧐🤓😎🥸🤩🥳");

// whitespace
add("whitespace", "tabs_newlines", "a\tb\t\tc\n\nd\n\n\ne   f    g\r\nh\r\n\r\ni \t \n j");
add("whitespace", "trailing", "trailing spaces   \nmore trailing\t\t\n   leading spaces\n\n\n\n    indented\n        deeper\n");
add("whitespace", "only_ws", "     \n\n\t\t  \n ");
add("whitespace", "unicode_ws", "nbsp\u00A0here, em\u2003space, ideographic\u3000space, zero\u200Bwidth, line\u2028sep, vtab\u000Bff\u000Cend");
add("whitespace", "leading_space", " leading single space and  double  spaces");

// special-token text
add("special", "im_end", "Hello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>");
add("special", "llama", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|> and <|reserved_special_token_5|>");
add("special", "deepseek", "<｜begin▁of▁sentence｜>You are helpful.<｜User｜>Hi<｜Assistant｜>Hello<｜end▁of▁sentence｜>");
add("special", "gemma_gptoss", "<bos><start_of_turn>user\nHi<end_of_turn>\n<|start|>assistant<|channel|>final<|message|>ok<|return|>");
add("special", "near_miss", "<|im_end |> <|im_end| > <| im_end|> <|IM_END|> <tool_call>{}</tool_call> <think>\nx\n</think>");

// misc edge cases
add("misc", "empty", "");
add("misc", "single_char", "a");
add("misc", "control_chars", "bell\u0007 nul\u0000 esc\u001b[31mred\u001b[0m del\u007f");
add("misc", "math_symbols", "∀x∈ℝ: x² ≥ 0 ⇒ √(x²) = |x|; ∑_{i=1}^{n} i = n(n+1)/2 ≈ ∞ ≠ ∅ ∫∂∇ ⊕⊗ → ← ↔");
add("misc", "url_email", "See https://example.com/path?q=1&r=two#frag or mailto:someone@example.org, ftp://x.y/z.");
add("misc", "repeated", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!!!!!!!!!!!!!!!!!!!!........----------==========");


// fuzz (deterministic): random mixes of scripts, digits, whitespace, punctuation, case-folding
// traps for (?i:'s...) and fragments of special tokens
function mulberry32(a) { return function () { a |= 0; a = a + 0x6D2B79F5 | 0; let t = Math.imul(a ^ a >>> 15, 1 | a); t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t; return ((t ^ t >>> 14) >>> 0) / 4294967296; }; }
const rnd = mulberry32(12345);
const pick = (a) => a[Math.floor(rnd() * a.length)];
const atoms = [
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", ..."0123456789", ..."!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
  " ", " ", " ", "  ", "\t", "\n", "\n\n", "\r\n", "\r", "\u000b", "\u000c", "\u0085", "\u00a0", "\u1680", "\u2000", "\u2009", "\u200b", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff",
  "'s", "'S", "'t", "'T", "'re", "'RE", "'ve", "'m", "'ll", "'LL", "'d", "'D", "\u2019s", "'\u017f", "'\u212a", "\u017f", "\u212a", "\u00df", "\u0130", "\u0131", "\ufb06",
  "the", " the", " The", "ing", " hello", " world", "HTTP", "camelCase", "snake_case", "...", "--", "==", "->", "=>", "//", "/*", "*/", "{}", "[]", "();",
  "é", "e\u0301", "ñ", "ü", "Å", "A\u030a", "ﬁ", "①", "²", "½", "٣", "۴", "४", "௫", "๖", "໗", "༨", "߉", "Ⅻ", "〇", "𝟘",
  "我", "们", "的", "是", "中文", "日本語", "ひらがな", "カタカナ", "ｶﾀｶﾅ", "한국어", "한", "ㄱ", "龘", "〜", "、", "。", "「", "」", "！", "？", "（", "）",
  "مرحبا", "ال", "ِ", "ّ", "שלום", "नमस्ते", "ि", "ภาษา", "ั", "Привет", "Ω", "ά", "ჰ", "ᐊ", "ꙮ",
  "😀", "👍🏽", "👨‍👩‍👧", "🇺🇸", "❤️", "1️⃣", "🏳️‍🌈", "\u200d", "\ufe0f", "𝔘𝔫𝔦", "𠀀", "\u{E0001}",
  "<|", "|>", "<|im_end|>", "<|im_start|>", "<|endoftext|>", "<|eot_id|>", "<|begin_of_text|>", "<｜User｜>", "<｜Assistant｜>", "<｜end▁of▁sentence｜>", "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<|return|>", "<|channel|>", "<tool_call>", "<think>", "</think>", "<unused5>", "<mask>", "[multimodal]", "<0x41>", "▁", "▁▁",
  "\u0000", "\u0007", "\u001b", "\u007f", "\u00ad", "\u0600", "\ud7ff", "\ue000", "\ufffd", "\ufffc",
  "1234", "12345678", "3.14", "1,000", "0x1F", "2024-01-01", "v1.2.3", "$100", "100%",
];
for (let i = 0; i < 400; i++) {
  const n = 1 + Math.floor(rnd() * (i < 200 ? 12 : 60));
  let s = "";
  for (let k = 0; k < n; k++) s += pick(atoms);
  add("fuzz", String(i).padStart(3, "0"), s);
}
// runs of one repeated atom (stress equal-rank merge ties)
for (const a of ["a", "ab", " ", "\n", "=", "-", ".", "0", "1", "我", "😀", "▁", "<|", "\t ", "aa ", "ll"]) {
  for (const n of [2, 3, 5, 8, 13, 33]) add("fuzz", `rep_${JSON.stringify(a)}_${n}`, a.repeat(n));
}

// long (~200k chars), stored as a recipe (see expandText in texts.mjs)
const paraEn = T.find(t => t.name === "english/para3").text + "\n\n";
add("long", "english_200k", null); Object.assign(T[T.length - 1], { repeat: paraEn, min_utf16: 200000 });
const paraMix = [T.find(t=>t.name==="english/para2").text, T.find(t=>t.name==="code/python").text, T.find(t=>t.name==="cjk/mixed").text, T.find(t=>t.name==="numbers/digits").text, T.find(t=>t.name==="emoji/emoji").text, T.find(t=>t.name==="arabic/arabic").text].join("\n") + "\n";
add("long", "mixed_200k", null); Object.assign(T[T.length - 1], { repeat: paraMix, min_utf16: 200000 });
for (const t of T) if (t.text === null) delete t.text;

fs.writeFileSync(new URL("../testdata/texts.json", import.meta.url), JSON.stringify(T, null, 0).replace(/\},\{/g, "},\n{") + "\n");
console.log(T.length, "texts");
