// The site search (Sphinx's own searchtools.js, with this file as its html_search_scorer; fxsite/sphinx/search.py
// writes it into the build with FXGUIDE_CAUSES, the catalogue of causes fxguide.diagnose and the error index share,
// set above this line). Sphinx loads the scorer in language_data.js, right after searchtools.js and before the index
// and the first query, on the search page and, for search as you type, on every page: so it can wrap `Search`.
//
// What it adds to Sphinx's search, for a reader who pastes an error or types a few words:
// - the pasted text is read as a traceback prints it: the message line is kept (the last `Type: message` line,
//   else Dynamo's `Explanation:` line), the module path of the exception class is dropped, and values torch
//   fills in (numbers, sizes, names with a numeric suffix, u0/s1 symbols, paths, quoted names, <CustomOpDef(..)>)
//   are optional words: Sphinx's search, which needs every word, gets the others;
// - a message that a cause of the catalogue matches (its pattern, its graph-break id, or most of its words) lands
//   on that cause's section first;
// - a pasted traceback lands, after those, on the guide's page for the part of torch its last torch frame is in
//   (FXGUIDE_TOPICS, as `python -m fxguide.explain` says "the guide on ..."): a message no cause knows still
//   finds the page on what the reader was doing;
// - a heading whose words cover the query's words is a title match (Sphinx's own needs the query as a substring);
// - when Sphinx finds no page with every word, pages are ranked by how many of the words they hold;
// - generated pages (Compatibility, the API references, the indexes) come after the guide's pages;
// - a search that finds nothing says where to look next: the error index and `python -m fxguide.explain`.
var FXGUIDE_CAUSES = typeof FXGUIDE_CAUSES === "undefined" ? [] : FXGUIDE_CAUSES;
var FXGUIDE_TOPICS = typeof FXGUIDE_TOPICS === "undefined" ? [] : FXGUIDE_TOPICS;
const FXGUIDE_GENERATED = new Set([
  "compatibility", "reference/torch-fx-api", "reference/fxguide-api", "genindex", "py-modindex",
]);

var Scorer = {
  score: (result) => {
    const [docname, title, anchor, descr, score, filename, kind] = result;
    const own = kind === "title" ? score + 100 : score;
    return FXGUIDE_GENERATED.has(docname) ? own - 60 : own;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: {0: 15, 1: 5, 2: -5},
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};

const FxSearch = (() => {
  const QUALIFIED = /^\s*(?:[A-Za-z_]\w*\.)+(?=[A-Z]\w*: )/;
  const EXCEPTION_LINE = /^[A-Z]\w*: /;
  const GRAPH_BREAK = /\bgb(\d{4})\b/i;
  // values torch fills in: optional words (the order matters: the widest first)
  const VALUES = [
    /https?:\/\/\S+/g,
    /<[A-Za-z]\w*\((?:[^()]|\([^()]*\))*\)>/g,  // <CustomOpDef(mylib::scaled)>, <OpOverload(op=...)>
    /<(?:class|function|module|built-in)[^>]*>/g,
    /(?:[\w.~-]*\/)+[\w.-]+(?::\d+)?/g,  // paths, file.py:12
    /\b[\w-]+\.py(?::\d+)?\b/g,
    /torch\.Size\(\[[^\]]*\]\)|\[[\d,\s]+\]|\((?:\s*-?\d+\s*,)+\s*-?\d*\s*\)/g,  // sizes
    /'[^'\n]*'|"[^"\n]*"/g,  // quoted names
    /\b0x[0-9a-fA-F]+\b/g,
    /\b[A-Za-z_]+_\d+\b/g,  // attention_mask_1, print_1
    /\b[a-z]\d+\b/g,  // u0, s1
    /\b\d+(?:\.\d+)?(?:e-?\d+)?\b/g,
  ];
  const WORD = /[\p{Letter}\p{Number}_]+/gu;

  const messageLine = (text) => {
    const lines = text.split(/\r?\n/).map((line) => line.replace(QUALIFIED, "").trim()).filter((line) => line);
    const exceptions = lines.filter((line) => EXCEPTION_LINE.test(line) && !line.startsWith("Explanation:")
      && !line.startsWith("Hint:"));
    if (exceptions.length) return exceptions[exceptions.length - 1];
    const explanation = lines.find((line) => line.startsWith("Explanation:"));
    return explanation || lines[0] || "";
  };

  const stem = (word) => {
    const lower = word.toLowerCase();
    return typeof Stemmer === "undefined" ? lower : new Stemmer().stemWord(lower);
  };
  const isStop = (word) => typeof stopwords !== "undefined" && stopwords.has(word.toLowerCase());
  const words = (text) => (text.match(WORD) || []).filter((word) => !isStop(word) && !/^\d+$/.test(word));
  const stems = (text) => [...new Set(words(text).filter((word) => word.length > 1).map(stem))];

  // The query as Sphinx gets it, and what the additions need.
  const read = (raw) => {
    const graphBreak = (raw.match(GRAPH_BREAK) || [])[1];
    const line = messageLine(raw);
    let required = line;
    let optional = "";
    for (const value of VALUES) {
      required = required.replace(value, (found) => { optional += " " + found; return " "; });
    }
    required = required.replace(/^Explanation:\s*/, "");
    const text = words(required).join(" ");
    return {raw, line, graphBreak: graphBreak ? `GB${graphBreak}` : "", text: text || line,
            required: stems(required), optional: stems(optional).filter((s) => !/^\d/.test(s))};
  };

  const same = (w, h) => h === w || (w.length > 3 && h.startsWith(w)) || (h.length > 3 && w.startsWith(h));
  const covers = (wanted, have) => wanted.every((w) => have.some((h) => same(w, h)));

  const causeRegexes = FXGUIDE_CAUSES.map((cause) => {
    try { return new RegExp(cause.regex); } catch (error) { return null; }
  });
  const causeStems = FXGUIDE_CAUSES.map((cause) => stems([cause.title, ...cause.messages].join(" ")));
  // the exception types the catalogue's messages start with (a message printed without one, a later line of a
  // longer message, gives none: guessed in front of every query, its words would match any cause's pattern)
  const causeTypes = [...new Set(FXGUIDE_CAUSES.flatMap((c) => c.messages.filter((m) => EXCEPTION_LINE.test(m))
    .map((m) => m.split(": ")[0])))];

  // the sections of the catalogue that answer the pasted text, with a score (higher first)
  const causeResults = (query, index) => {
    const found = [];
    const line = query.line.replace(/^Explanation:\s*/, "Explanation: ");
    const candidates = EXCEPTION_LINE.test(line) ? [line] : [line, ...causeTypes.map((type) => `${type}: ${line}`)];
    FXGUIDE_CAUSES.forEach((cause, i) => {
      // a cause that depends on where the error was raised needs that frame in the pasted text
      if (cause.frames && !new RegExp(cause.frames).test(query.raw)) return;
      let score = 0;
      const tried = cause.type_only ? [line] : candidates;  // "Unsupported: " guessed would take any words
      if (causeRegexes[i] && tried.some((text) => causeRegexes[i].test(text))) score = 1000;
      else if (query.graphBreak && cause.graph_break === query.graphBreak) score = 990;
      else if (query.required.length >= 3 && covers(query.required, causeStems[i])) score = 900;
      else if (query.required.length >= 3) {
        const shared = query.required.filter((w) => covers([w], causeStems[i])).length;
        if (shared / query.required.length >= 0.75) score = 600 + Math.round(100 * shared / query.required.length);
      }
      if (!score) return;
      const file = index.docnames.indexOf(cause.page);
      if (file < 0) return;
      found.push([cause.page, `${index.titles[file]} > ${cause.title}`, cause.anchor ? "#" + cause.anchor : "",
                  null, score, index.filenames[file], "title"]);
    });
    return found;
  };

  // the guide's page on the part of torch that raised the pasted error: its last frame in torch (or torchao)
  const FRAME = /File "([^"\n]+)", line \d+/g;
  const topicResults = (query, index) => {
    const inTorch = (path) => {  // the path from its last torch/ or torchao/ folder: torch/fx/proxy.py
      const found = [...path.matchAll(/(?:^|\/)(torch(?:ao)?\/)/g)];
      if (!found.length) return "";
      const last = found[found.length - 1];
      return path.slice(last.index + last[0].length - last[1].length);
    };
    const places = [...query.raw.matchAll(FRAME)].map((m) => inTorch(m[1].replaceAll("\\", "/")))
      .filter((path) => path);
    for (const path of places.reverse()) {
      const part = FXGUIDE_TOPICS.find((t) => path.startsWith(t.prefix));
      if (!part) continue;
      const file = index.docnames.indexOf(part.page);
      if (file < 0) return [];
      return [[part.page, `${index.titles[file]} (the guide on ${part.what}, where the traceback's last torch frame is)`,
               part.anchor ? "#" + part.anchor : "", null, 500, index.filenames[file], "title"]];
    }
    return [];
  };

  // headings whose words cover the query's words (all of them first; at least half of them and two, after)
  const titleResults = (query, index) => {
    const found = [];
    if (!query.required.length) return found;
    for (const [title, places] of Object.entries(index.alltitles)) {
      const have = stems(title);
      if (!have.length) continue;
      const shared = query.required.filter((w) => covers([w], have)).length;
      const all = shared === query.required.length;
      if (!all && (shared < 2 || 2 * shared < query.required.length)) continue;
      const score = all ? 20 + Math.round(10 * Math.min(1, shared / have.length))
                        : Math.round(15 * shared / query.required.length);
      for (const [file, id] of places) {
        const whole = index.titles[file] === title;
        found.push([index.docnames[file], whole ? title : `${index.titles[file]} > ${title}`,
                    id !== null ? "#" + id : "", null, score + (whole ? 5 : 0), index.filenames[file], "title"]);
      }
    }
    return found;
  };

  // pages ranked by how many of the words they hold, for when no page holds them all
  const fallbackResults = (query, index) => {
    const all = [...new Set([...query.required, ...query.optional])];
    const counts = new Map();
    for (const word of all) {
      const files = new Set();
      for (const table of [index.terms, index.titleterms]) {
        if (Object.hasOwn(table, word)) [].concat(table[word]).forEach((f) => files.add(f));
        else if (word.length > 3) {
          for (const term of Object.keys(table)) if (term.startsWith(word)) [].concat(table[term]).forEach((f) => files.add(f));
        }
      }
      files.forEach((f) => counts.set(f, (counts.get(f) || 0) + (query.required.includes(word) ? 2 : 1)));
    }
    const wanted = Math.max(2, Math.ceil(query.required.length));  // at least half of the required words' weight
    return [...counts].filter(([, count]) => count >= wanted)
      .map(([file, count]) => [index.docnames[file], index.titles[file], "", null, count * 3, index.filenames[file],
                               "text"]);
  };

  return {read, causeResults, topicResults, titleResults, fallbackResults};
})();

if (typeof Search !== "undefined" && !Search._fxguide) {
  Search._fxguide = true;
  const sphinxQuery = Search.query;
  const sphinxPerform = Search._performSearch;
  let current = null;

  Search.query = (raw) => {
    current = FxSearch.read(raw);
    Search._fxguideLast = current;
    sphinxQuery(current.text);
  };

  Search._performSearch = (query, searchTerms, excludedTerms, highlightTerms, objectTerms) => {
    const index = Search._index;
    const pasted = current || FxSearch.read(query);
    current = null;
    let results = sphinxPerform(query, searchTerms, excludedTerms, highlightTerms, objectTerms);
    const ours = [...FxSearch.causeResults(pasted, index), ...FxSearch.topicResults(pasted, index),
                  ...FxSearch.titleResults(pasted, index).map((r) => { r[4] = Scorer.score(r); return r; })];
    if (!results.some((r) => r[6] === "text")) {
      ours.push(...FxSearch.fallbackResults(pasted, index).map((r) => { r[4] = Scorer.score(r); return r; }));
    }
    // best first, one entry per page and section
    const seen = new Set();
    results = [...results, ...ours].sort((a, b) => b[4] - a[4]).filter((r) => {
      const key = r[0] + r[2];
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    Search._fxguideCount = results.length;
    return results.reverse();  // Sphinx shows them from the end
  };

  const sphinxFinishQuery = Search.query;
  Search.query = (raw) => {
    sphinxFinishQuery(raw);
    if (Search._fxguideCount === 0 && Search.status) {
      const root = document.documentElement.dataset.content_root || "";
      Search.status.innerHTML = "Nothing on the site matches every word. If you pasted an error, look it up in the "
        + `<a href="${root}reference/errors.html">error index</a> by its first words, or run `
        + "<code>python -m fxguide.explain \"&lt;your message&gt;\"</code>, which lists the closest causes it knows.";
    }
  };
}
