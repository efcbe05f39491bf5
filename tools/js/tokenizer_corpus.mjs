// Writes the tokenizer conformance corpus (tests/data/tokenizer/corpus.json): a deterministic list
// of test inputs. Each entry is {"cat": category, "text": string} or, for byte strings that are not
// valid UTF-8, {"cat": "invalid_utf8", "hex": "..."}.
//
//   node tools/js/tokenizer_corpus.mjs > tests/data/tokenizer/corpus.json
//
// Then regenerate the golden ids with tools/js/tokenizer_golden.mjs.

const out = [];
const add = (cat, text) => out.push({ cat, text });
const addHex = (hex) => out.push({ cat: 'invalid_utf8', hex });

// Deterministic PRNG (mulberry32) so the corpus never changes between runs.
let seed = 0x5eed1234;
function rand() {
  seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const cp = (...c) => String.fromCodePoint(...c);

// --- empty and tiny --------------------------------------------------------------------------
for (const s of ['', ' ', 'a', 'A', '0', '.', '\n', '\t', '  ', "'", '\u00e9', 'I']) add('tiny', s);

// --- English prose ---------------------------------------------------------------------------
const prose = [
  'The quick brown fox jumps over the lazy dog.',
  "It's a truth universally acknowledged that tokenizers are harder than they look.",
  "We'll see; they're sure it'd work, but I've doubts and you'd better check.",
  "SHOUTING IT'S LOUD, WE'LL SEE, THEY'RE HERE, I'VE GOT IT, YOU'D KNOW, SHE'LL GO",
  'Hello, world! How are you doing today?',
  'Dr. Smith arrived at 3:45 p.m. on Jan. 5th, 2024 -- exactly as planned.',
  'She said, "No," and left... (quietly) [or so they say] {really}.',
  'e-mail: someone@example.com; web: https://example.org/path?q=1&r=two#frag',
  'Well—actually–no: “smart quotes” and ‘single ones’ … plus «guillemets».',
  'A sentence with trailing spaces   ',
  '   A sentence with leading spaces',
  'Multiple\nlines\nof\ntext\n',
  'Paragraph one.\n\nParagraph two.\n\n\nParagraph three.',
  'Tabs\tbetween\twords\tand\t\tdouble tabs.',
  'Mixed   spacing    between     words.',
  "don't won't can't shouldn't y'all o'clock rock'n'roll",
  "'s 't 're 've 'm 'll 'd at start",
  "The cat's toy; the dogs' bones; James's book.",
  'Numbers like 1st, 2nd, 3rd and 4th appear in text.',
  'CamelCaseWordsAndsnake_case_words and kebab-case-words.',
  'ALLCAPS lowercase MiXeD cAsE',
  'Punctuation!!! Really??? Yes... No;;; Maybe:::',
  'I paid $1,234.56 for 3.5 kg (about 7.7 lb) at 20% off.',
  'Version 2.0.1-beta+build.42 was released on 2023-11-05T12:34:56Z.',
  'The year 1984 and the number 1000000 and 3.14159265358979.',
  'Hyphenated-compound-adjective well-known state-of-the-art.',
  'Ellipsis... and em—dash and en–dash and minus − signs.',
  "He said: 'I'll be back.' Then he wasn't.",
  'OK. ok. Ok. oK.',
  'a b c d e f g h i j k l m n o p q r s t u v w x y z',
];
for (const s of prose) add('prose', s);

// --- code ------------------------------------------------------------------------------------
const code = [
  'def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n',
  'for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}',
  '#include <stdio.h>\nint main(void) { printf("%d\\n", 42); return 0; }',
  'const x = async () => { await fetch(`/api/${id}`); };',
  '{"key": "value", "list": [1, 2, 3], "nested": {"a": null, "b": true}}',
  '<div class="container"><p id=\'x\'>Hello &amp; welcome</p></div>',
  'SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name ORDER BY 2 DESC;',
  'x = [i**2 for i in range(10) if i % 2 == 0]  # squares',
  'fn main() {\n    let v: Vec<u32> = (0..10).collect();\n    println!("{:?}", v);\n}',
  '    indented with four spaces\n        and eight\n\t\tand two tabs',
  'if (a && b || !c) { return a != b ? a : b; }',
  'std::vector<std::pair<int, std::string>> v{{1, "one"}, {2, "two"}};',
  'git commit -m "Fix bug #123" && git push origin main',
  '$ ls -la /usr/local/bin | grep -v "^d" > out.txt 2>&1',
  'lambda x: x if x > 0 else -x',
  'class Foo(Bar):\n    """Docstring."""\n\n    def __init__(self):\n        super().__init__()\n',
  'a+=1;b-=2;c*=3;d/=4;e%=5;f<<=6;g>>=7;h&=8;i|=9;j^=10;',
  '/* block comment */ // line comment\n# hash comment\n-- sql comment',
  'regex = r"^(?:[a-z0-9!#$%&\'*+/=?^_`{|}~-]+)@example\\.com$"',
  'matrix = [[1, 2, 3],\n          [4, 5, 6],\n          [7, 8, 9]]',
  '<?php echo $var; ?> <%= erb %> {{ jinja }} {% if x %}',
  'key1=value1\nkey2 = value2\n[section]\nflag=true\n',
  'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-old\n+new\n',
  '0x1F 0b1010 0o777 1e-10 6.02e23 .5 5. 1_000_000',
  '::std::move(*it)->~T(); a->b.c[d]::e',
];
for (const s of code) add('code', s);

// --- math and LaTeX --------------------------------------------------------------------------
const math = [
  '\\frac{a}{b} + \\sqrt{x^2 + y^2} = \\int_0^\\infty e^{-t^2}\\,dt',
  'Let $f(x) = x^3 - 3x + 1$. Find all $x$ such that $f(x) = 0$.',
  '$$\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}$$',
  '\\begin{align} a &= b + c \\\\ d &= e - f \\end{align}',
  'E = mc^2, F = ma, PV = nRT',
  '∀x ∈ ℝ, ∃y ∈ ℕ: x < y ≤ x + 1',
  '∫∫∫ ∂f/∂x ∇·F = ∮ F·dS',
  '2 + 2 = 4; 3 × 4 = 12; 10 ÷ 2 = 5; 7 − 8 = −1',
  'The answer is \\boxed{42}.',
  '\\left( \\begin{matrix} 1 & 0 \\\\ 0 & 1 \\end{matrix} \\right)',
  'x_{i,j}^{(k)} = \\alpha \\cdot \\beta_{n-1} + \\gamma^{2}',
  'If $a_1 = 1$ and $a_{n+1} = 2a_n + 1$, then $a_n = 2^n - 1$.',
  '\\mathbb{R}^n \\to \\mathbb{C}, \\quad \\mathcal{O}(n \\log n)',
  'sin²θ + cos²θ = 1, e^{iπ} + 1 = 0',
  '√2 ≈ 1.41421356, π ≈ 3.14159, ∞ − ∞ ≠ 0',
  '1/2 + 1/3 = 5/6 and 0.333... = 1/3',
  '\\binom{n}{k} = \\frac{n!}{k!(n-k)!}',
  '\\lim_{x \\to 0} \\frac{\\sin x}{x} = 1',
  '𝑓(𝑥) = 𝑎𝑥² + 𝑏𝑥 + 𝑐 and 𝔸𝔹ℂ 𝕏𝕐ℤ',
  '(a+b)^2 = a^2 + 2ab + b^2',
  'Solve: 3x + 5 = 20 ⇒ x = 5.',
  '\\text{area} = \\pi r^2 = 78.54\\,\\text{cm}^2',
  '\\[ \\det(A - \\lambda I) = 0 \\]',
  'P(A|B) = P(B|A)P(A)/P(B)',
  '||x||₂ = (Σᵢ xᵢ²)^{1/2}',
];
for (const s of math) add('math', s);

// --- digit runs ------------------------------------------------------------------------------
let digits = '';
for (let n = 1; n <= 40; ++n) {
  digits += String(n % 10);
  if ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 20, 25, 31, 40].includes(n)) add('digits', digits);
}
for (const s of ['1234567890' .repeat(5), '3.14159265358979323846264338327950288', '1,000,000,000',
  '+1 (555) 123-4567', '2024-01-01 00:00:00', '007', '0000000000', '12 345 678', '١٢٣٤٥٦٧٨٩٠',
  '१२३४५६', '１２３４５６', '①②③', '½ ¾ ⅓', 'x1y22z333w4444', 'abc123def4567'])
  add('digits', s);

// --- whitespace, newlines, tabs ----------------------------------------------------------------
for (const n of [1, 2, 3, 4, 5, 8, 16, 33]) add('whitespace', ' '.repeat(n));
for (const n of [1, 2, 3, 4, 7]) add('whitespace', '\n'.repeat(n));
for (const s of ['\t', '\t\t\t', '\r\n', '\r\n\r\n', '\r', ' \n ', '\n \n', 'a\n\nb', 'a \n b',
  'word   \n\n   word', '\t\n\t\n', '    \t    ', 'x\u00a0y', 'x\u3000y', 'x\u2028y\u2029z',
  'x\u0085y', 'x\u180ey', 'x\u200by', '\ufeffBOM at start', 'x\u2003\u2009\u200ay', ' \t \t ',
  'trailing newline\n', '\n\nleading newlines', 'a\vb\fc', 'end with spaces and tab \t'])
  add('whitespace', s);

// --- CJK -------------------------------------------------------------------------------------
const cjk = [
  '你好，世界！', '我爱自然语言处理。', '今天天气很好，我们去公园散步吧。',
  '日本語のテキストです。カタカナとひらがな。', 'こんにちは、元気ですか？', '東京都渋谷区',
  '한국어 텍스트입니다.', '안녕하세요 세계', '中文English混合text测试', '繁體中文與简体中文',
  '　全角スペース　', 'ＡＢＣ　ｄｅｆ　１２３', '「引用」『二重引用』【括弧】', '𠀀𠀁𠀂 (CJK Ext B)',
  '一二三四五六七八九十百千万亿', 'ｶﾀｶﾅ半角', '漢字かな交じり文', '中文，标点。符号！？',
  '数学公式：x²+y²=z²', '사과 123개', '価格は1,000円です', '龍𪚥𰻞',
];
for (const s of cjk) add('cjk', s);

// --- emoji -----------------------------------------------------------------------------------
const emoji = [
  '😀', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🏴‍☠️', '🇺🇸🇯🇵🇩🇪', '1️⃣ #️⃣ *️⃣', '❤️ ♥ ❤',
  '👩🏾‍💻 working', 'I love 🍕 and 🍣!', '🧑‍🤝‍🧑 🫶🏻', '🤷‍♀️🤦‍♂️', '🏴󠁧󠁢󠁳󠁣󠁴󠁿 (Scotland)',
  '👁️‍🗨️', '🐈‍⬛ black cat', '😀😃😄😁😆😅😂🤣', '☺️☺', 'emoji at end 🎉', '🎉 emoji at start',
  '👨‍👨‍👧‍👧👩‍❤️‍💋‍👨',
];
for (const s of emoji) add('emoji', s);

// --- combining marks (several change under NFC) -----------------------------------------------
const combining = [
  'e\u0301', 'cafe\u0301', 'café', 'n\u0303o', 'A\u030a', 'Å', '\u1100\u1161\u11a8',
  'Vie\u0323\u0302t Nam', 'Việt Nam', 'a\u0300\u0301\u0302\u0303\u0304', 'Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u0334\u0335\u031c\u0330\u0354\u036bL\u0330\u0324G\u0316O',
  'ﬁ ﬂ ﬀ', 'ſt', 'Ω Ω', 'K K', 'x\u0307', 'दे\u0935नागरी', 'हिन्दी भाषा', 'ภาษาไทย', 'ก\u0e49\u0e33',
  'o\u0308 vs ö', '\u0301 leading combining mark', 'q\u0323\u0307', 'ḱṷṓn', '\u2126\u212b',
];
for (const s of combining) add('combining', s);

// --- right-to-left scripts -------------------------------------------------------------------
const rtl = [
  'مرحبا بالعالم', 'שלום עולם', 'سلام دنیا', 'العربية: ١٢٣ و 456', 'English then עברית then English',
  '\u202eRLO override\u202c', 'a\u200fb\u200ec', 'בְּרֵאשִׁית בָּרָא', 'ﷺ ﷻ', 'اَلسَّلَامُ عَلَيْكُمْ',
  'کتاب‌ها', 'Urdu: اردو زبان', 'ܐܪܡܝܐ', 'ދިވެހި', '(قوس) [مربع]',
];
for (const s of rtl) add('rtl', s);

// --- special tokens inside text (all three families; plain text for the others) ---------------
const specials = [
  '<|im_start|>', '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<tool_call>', '<|begin_of_text|>',
  '<|end_of_text|>', '<|start_header_id|>', '<|eot_id|>', '<｜begin▁of▁sentence｜>',
  '<｜end▁of▁sentence｜>', '<｜User｜>', '<｜Assistant｜>', '<|fim_prefix|>', '<|reserved_special_token_5|>',
];
for (const s of specials) {
  add('special', s);
  add('special', `Hello ${s} world`);
  add('special', `${s}${s}`);
}
for (const s of [
  '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
  '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>',
  '<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜></think>Hello<｜end▁of▁sentence｜>',
  '<|im_start', 'im_start|>', '<|im_start|', '< |im_start| >', '<<|im_end|>>', 'x<think>y</think>z',
  '<think>\nreasoning\n</think>\n\nanswer', '  <|im_end|>  ', '\n<|im_end|>\n', '<|IM_START|>',
])
  add('special', s);

// --- very long words -------------------------------------------------------------------------
add('long', 'a'.repeat(1000));
add('long', 'ab'.repeat(700));
add('long', 'Supercalifragilisticexpialidocious'.repeat(20));
add('long', 'pneumonoultramicroscopicsilicovolcanoconiosis');
add('long', 'https://example.com/' + 'very/long/path/segment/'.repeat(30) + 'index.html?x=' + 'y'.repeat(100));
let b64 = '';
for (let i = 0; i < 400; ++i) b64 += pick('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split(''));
add('long', b64 + '==');
add('long', '9'.repeat(500));
add('long', '!'.repeat(300));
add('long', '你'.repeat(300));
add('long', '🎉'.repeat(100));
add('long', ' '.repeat(500) + 'x');
add('long', '\n'.repeat(200));
add('long', 'x' + '\t'.repeat(100) + 'y');
add('long', 'lorem ipsum dolor sit amet '.repeat(80));

// --- odd code points -------------------------------------------------------------------------
for (const s of ['\u0000', 'a\u0000b', '\u0001\u0002\u0003\u001f\u007f', '\u0080\u009f',
  '\ue000\uf8ff private use', '\ufffd replacement char', '\uffff\ufffe', cp(0x10ffff), cp(0x1f000, 0x1fbff),
  '\u00ad soft hyphen', '\u200d\u200c zwj zwnj', 'İstanbul ıi', 'ß ẞ ǅ ǈ', 'Ⅻ ⅻ', 'ÀÁÂÃÄÅàáâãäå',
  'Ελληνικά ΣΊΣΥΦΟΣ', 'Русский текст', 'Ўзбек ҚҒҲ', 'Հայերեն', 'ქართული', 'ᚠᚢᚦᚨᚱᚲ', 'ꦗꦮ', '𐌰𐌱𐌲 gothic',
  '\u{1d400}\u{1d7ff}', 'ÿ þ ð æ œ ø', '¡¿', '§¶†‡•', '™ © ®', 'µ vs μ'])
  add('odd', s);

// --- random mixes from a pool of every category -------------------------------------------------
const pool = [
  'a', 'b', 'Z', 'q', ' ', ' ', ' ', '\n', '\t', '\r\n', '0', '7', '42', '.', ',', '!', '?', "'", '"',
  "'s", "'ll", '(', ')', '{', '}', '[', ']', '<', '>', '|', '_', '-', '+', '=', '/', '\\', '$', '%', '#',
  '你', '好', 'の', 'カ', '한', 'é', 'e\u0301', 'ß', 'Ω', 'ж', 'ש', 'ع', '😀', '👍🏽', '👨‍👩‍👧', '🇫🇷',
  '\u00a0', '\u3000', '\u200b', '½', '①', '١', 'ﬁ', '<|im_end|>', '<think>', '<|eot_id|>',
  '<｜User｜>', 'hello', 'World', 'the', 'ing', 'tion', '  ', '   ', '\n\n',
];
for (let k = 0; k < 70; ++k) {
  const n = 1 + Math.floor(rand() * 40);
  let s = '';
  for (let i = 0; i < n; ++i) s += pick(pool);
  add('random', s);
}
// Random code points from several planes (no surrogates).
for (let k = 0; k < 25; ++k) {
  let s = '';
  const n = 1 + Math.floor(rand() * 20);
  for (let i = 0; i < n; ++i) {
    const r = rand();
    let c;
    if (r < 0.3) c = 0x20 + Math.floor(rand() * 0x5f);
    else if (r < 0.6) c = 0xa0 + Math.floor(rand() * (0xd7ff - 0xa0));
    else if (r < 0.8) c = 0xe000 + Math.floor(rand() * 0x1ffd);
    else c = 0x10000 + Math.floor(rand() * 0x2ffff);
    s += cp(c);
  }
  add('random_cp', s);
}

// --- invalid UTF-8 (hex bytes); the reference sees them through WHATWG TextDecoder ------------
for (const h of ['ff', '80', 'c0af', 'e28228', 'e282', 'f09f98', 'ed a080'.replace(' ', ''),
  '61ff62', 'f4908080', '68656c6c6ffe776f726c64', 'e4bda0e5a5', 'c3', 'f0', 'ffffff', 'e282ac80'])
  addHex(h);

process.stdout.write('[\n' + out.map((e) => JSON.stringify(e)).join(',\n') + '\n]\n');
