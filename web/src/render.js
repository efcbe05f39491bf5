// Model text -> safe HTML: math ($…$, $$…$$, \(…\), \[…\]) typeset by KaTeX, the rest as
// Markdown (markdown-it, raw HTML off), the whole sanitised by DOMPurify. Math is cut out before
// Markdown sees it (so `_` and `*` inside formulas stay TeX; private-use characters mark the
// places) and put back as KaTeX's HTML.
import katex from 'katex';
import MarkdownIt from 'markdown-it';
import DOMPurify from 'dompurify';

const md = new MarkdownIt({ html: false, linkify: false, breaks: true });

// Longest delimiters first; a formula never spans more than 2000 characters.
const MATH = /\$\$([\s\S]{1,2000}?)\$\$|\\\[([\s\S]{1,2000}?)\\\]|\\\(([\s\S]{1,2000}?)\\\)|\$([^$\n]{1,500}?)\$/g;

export function renderMath(tex, display) {
  return katex.renderToString(tex, { displayMode: display, throwOnError: false, output: 'html' });
}

/** Markdown + math text to sanitised HTML. */
export function renderText(text) {
  const formulas = [];
  const marked = text.replace(MATH, (m, d1, d2, i1, i2) => {
    const display = d1 !== undefined || d2 !== undefined;
    const tex = d1 ?? d2 ?? i1 ?? i2;
    formulas.push(renderMath(tex, display));
    return `\uE000${formulas.length - 1}\uE001`;
  });
  let html = md.render(marked);
  html = html.replace(/\uE000(\d+)\uE001/g, (m, i) => formulas[Number(i)] ?? '');
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true, svg: true } });
}
