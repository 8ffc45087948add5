// The site search's scorer (Sphinx's html_search_scorer, set by fxsite/sphinx/site.py).
// Sphinx's default weights, plus one rule: a result whose section heading the query
// covers (at least half of the heading, Sphinx's own test for a title match) comes
// before results that only contain the query's words. Error messages and symptoms are
// headings (the error index, the problem-first pages), so pasting one lands on its section.
var Scorer = {
  score: (result) => {
    const [docname, title, anchor, descr, score, filename, kind] = result;
    return kind === "title" ? score + 100 : score;
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
