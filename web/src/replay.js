// replay.js — `parity replay` results (schema "parity.replay/1", docs/replay.md): each replayed op's
// error given its own inputs, in units of its dtype's rounding, whether the recorded output was
// reproduced bit for bit, and why an event could not be replayed; and the replay verdicts that
// `parity compare --replay` attaches to the comparison's suspects.

P.replayU = (v) => (typeof v === 'string' ? (v === 'Infinity' || v === 'NaN' ? 'non-finite' : v) : v === undefined || v === null ? '' : P.fmt(P.num(v)) + ' u');

P.plainTable = (cols, rows) => P.el('table', { class: 'plain' },
  P.el('thead', null, P.el('tr', null, cols.map((c) => P.el('th', { text: c })))),
  P.el('tbody', null, rows.map((r) => P.el('tr', { class: r.differs ? 'differs' : '' }, r.cells.map((c) => P.el('td', { text: P.str(c) }))))));

// results: parity.replay/1 documents; cmpResult: the drawn comparison (its suspects may carry `replay`).
P.renderReplay = function renderReplay(results, cmpResult) {
  const sus = (cmpResult && Array.isArray(cmpResult.suspects) ? cmpResult.suspects : []).filter((s) => s && s.replay);
  if (!results.length && !sus.length) return;
  const sec = P.openSection('sec-replay', 'Replay', 'Each op called again on its recorded inputs: its error against a float64 reference in units of its dtype\'s rounding (above 32 u it creates error, within rounding it only carries its inputs\' error), and whether the recorded output is reproduced bit for bit.');
  if (sus.length) {
    sec.appendChild(P.el('h3', { class: 'minor', text: 'suspects of the comparison (compare --replay): confirmed = it creates the error, refuted = it only carries it' }));
    sec.appendChild(P.plainTable(['suspect', 'replay', 'evidence'],
      sus.map((s) => ({ differs: s.replay.status === 'confirmed', cells: [s.event, s.replay.status, s.replay.evidence] }))));
  }
  for (const r of results) {
    const s = r.summary || {};
    sec.appendChild(P.el('h3', { class: 'minor', text: `${P.str(r.run)}: ${P.num(s.replayed)} of ${P.num(s.selected)} op events replayed, ${P.num(s.bit_exact)} bit-exact, ${P.num(s.creates_error)} create error` }));
    const events = Array.isArray(r.events) ? r.events : [];
    const shown = events.filter((e) => e.status !== 'replayed' || e.creates_error || !e.bit_exact).slice(0, 500);
    if (!shown.length) {
      sec.appendChild(P.el('p', { text: 'Every replayed op carries its inputs\' error and reproduces its recorded output bit for bit.' }));
      continue;
    }
    sec.appendChild(P.plainTable(['event', 'fn', 'dtype', 'status', 'error', 'bit-exact', 'why'], shown.map((e) => {
      const rep = e.status === 'replayed';
      return { differs: !rep || e.creates_error, cells: [e.event, e.fn, e.dtype, rep ? (e.creates_error ? 'creates error' : 'carries') : 'not replayed',
        rep ? P.replayU(e.error_u) : '', rep ? (e.bit_exact ? 'yes' : 'no') : '', e.reason || e.note || ''] };
    })));
  }
};
