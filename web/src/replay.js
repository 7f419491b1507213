// replay.js — `parity replay` results (schema "parity.replay/1", docs/replay.md): each replayed op's
// error given its own inputs, in units of its dtype's rounding, whether the recorded output was
// reproduced bit for bit, and why an event could not be replayed. Also the replay verdicts that
// `parity compare --replay` attaches to suspects.

P.replayU = (v) => (typeof v === 'string' ? (v === 'Infinity' || v === 'NaN' ? 'non-finite' : v) : v === undefined || v === null ? '' : P.fmt(P.num(v)) + ' u');

P.renderReplay = function renderReplay(results) {
  const sec = P.openSection('sec-replay', 'Replay', 'Each op called again on its recorded inputs: its error against a float64 reference in units of its dtype\'s rounding (above 32 u it creates error), and whether the recorded output is reproduced bit for bit.');
  for (const r of results) {
    const s = r.summary || {};
    sec.appendChild(P.el('h3', { class: 'minor', text: `${P.str(r.run)}: ${P.num(s.replayed)} of ${P.num(s.selected)} op events replayed, ${P.num(s.bit_exact)} bit-exact, ${P.num(s.creates_error)} create error` }));
    const events = Array.isArray(r.events) ? r.events : [];
    const shown = events.filter((e) => e.status !== 'replayed' || e.creates_error || !e.bit_exact).slice(0, 500);
    const cols = ['event', 'fn', 'dtype', 'status', 'error', 'bit-exact', 'why'];
    sec.appendChild(P.el('table', { class: 'plain' },
      P.el('thead', null, P.el('tr', null, cols.map((c) => P.el('th', { text: c })))),
      P.el('tbody', null, shown.map((e) => P.el('tr', { class: e.creates_error || e.status !== 'replayed' ? 'differs' : '' }, [
        P.el('td', { text: P.str(e.event) }), P.el('td', { text: P.str(e.fn) }), P.el('td', { text: P.str(e.dtype) }),
        P.el('td', { text: e.status === 'replayed' ? (e.creates_error ? 'creates error' : 'carries') : 'not replayed' }),
        P.el('td', { text: P.replayU(e.error_u) }), P.el('td', { text: e.status === 'replayed' ? (e.bit_exact ? 'yes' : 'no') : '' }),
        P.el('td', { text: P.str(e.reason || e.note || '') })])))));
    if (!shown.length) sec.appendChild(P.el('p', { text: 'Every replayed op carries its inputs\' error and reproduces its recorded output bit for bit.' }));
  }
};

// The replay verdicts of a compare result's suspects (compare --replay), as a small table.
P.renderSuspectReplay = function renderSuspectReplay(cmpResult) {
  const sus = (cmpResult && Array.isArray(cmpResult.suspects) ? cmpResult.suspects : []).filter((s) => s.replay);
  if (!sus.length) return;
  const sec = P.openSection('sec-replay', 'Replay of the suspects', 'Each suspect\'s ops replayed on the target\'s recorded inputs with the golden\'s call: confirmed = it creates the error, refuted = it only carries it.');
  sec.appendChild(P.el('table', { class: 'plain' },
    P.el('thead', null, P.el('tr', null, ['suspect', 'replay', 'evidence'].map((c) => P.el('th', { text: c })))),
    P.el('tbody', null, sus.map((s) => P.el('tr', { class: s.replay.status === 'confirmed' ? 'differs' : '' }, [
      P.el('td', { text: P.str(s.event) }), P.el('td', { text: P.str(s.replay.status) }), P.el('td', { text: P.str(s.replay.evidence) })])))));
};
