// The live page of baton exporter. Every string from the backend (lock
// names, owners, modes, hosts, programs, labels, notes, errors) is
// written with textContent, never parsed as HTML: other clients choose
// them.
'use strict';

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// dur renders milliseconds the way people read a hold: 850ms, 12.4s, 3m05s, 2h07m.
function dur(ms) {
  if (ms < 1000) return ms + 'ms';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(1) + 's';
  const m = Math.floor(s / 60), h = Math.floor(m / 60);
  if (h === 0) return m + 'm' + String(Math.floor(s % 60)).padStart(2, '0') + 's';
  return h + 'h' + String(m % 60).padStart(2, '0') + 'm';
}

// heldFor is the engine's age when it keeps one, else how long this
// exporter has seen the entry (a lower bound).
function heldFor(e) {
  if (e.age_ms != null) return dur(e.age_ms);
  return '≥ ' + dur(e.seen_ms);
}

function flags(e) {
  const out = [];
  if (e.dead) out.push('dead');
  if (e.duplicate) out.push('duplicate');
  if (e.foreign) out.push('foreign');
  if (e.expired) out.push('expired');
  return out;
}

function addFlags(node, e) {
  for (const f of flags(e)) node.append(el('span', 'flag ' + f, f));
}

function tokenText(lock, e) {
  if (e.token != null) return String(e.token);
  if (lock.token_bound != null) return '≤ ' + lock.token_bound;
  return '?';
}

// program is the holder's program and its labels: "worker team=pay".
function program(e) {
  const labels = Object.keys(e.labels || {}).sort().map((k) => k + '=' + e.labels[k]);
  return [e.program || ''].concat(labels).join(' ').trim();
}

// who is where a waiter or stray entry runs: "web-1 pid 4242 worker".
function who(e) {
  const parts = [];
  if (e.host) parts.push(e.host);
  if (e.pid) parts.push('pid ' + e.pid);
  const p = program(e);
  if (p) parts.push(p);
  return parts.join(' ');
}

function holderBlock(lock, e) {
  const dl = el('dl', 'holder');
  const row = (k, v) => { dl.append(el('dt', '', k)); dl.append(v); };
  const owner = el('dd', 'mono owner', e.owner || '—');
  addFlags(owner, e);
  row('holder', owner);
  const tok = el('dd', 'token', tokenText(lock, e));
  tok.dataset.token = e.token != null ? String(e.token) : '';
  row('token', tok);
  if (e.host) row('host', el('dd', 'mono host', e.host));
  if (e.pid) row('pid', el('dd', 'mono pid', String(e.pid)));
  if (program(e)) row('program', el('dd', 'mono program', program(e)));
  row('held for', el('dd', 'held', heldFor(e)));
  if (e.lease_left_ms != null) row('lease left', el('dd', '', dur(Math.max(0, e.lease_left_ms))));
  row('mode', el('dd', 'kind', e.mode));
  if (e.note) row('note', el('dd', 'note', e.note));
  return dl;
}

// entryList lists waiters or stray entries: owner, mode, how long, and
// the process where it is known.
function entryList(cls, entries, verb) {
  const ol = el('ol', cls);
  for (const e of entries) {
    const li = el('li');
    li.append(el('span', 'mono', e.owner || '—'));
    li.append(el('span', 'kind', ' · ' + e.mode + ' · ' + verb + ' ' + heldFor(e)));
    if (who(e)) li.append(el('span', 'mono who', ' · ' + who(e)));
    addFlags(li, e);
    if (e.note) li.title = e.note;
    ol.append(li);
  }
  return ol;
}

function lockCard(lock) {
  const card = el('section', 'lock');
  card.dataset.lock = lock.name;
  const h2 = el('h2', '', lock.name);
  if (lock.error) {
    h2.append(el('span', 'state failed', 'unreadable'));
    card.append(h2, el('p', 'error', lock.error));
    return card;
  }
  // An expired holder (a SQL row past its deadline) holds no more: it is
  // listed with what takes no part.
  const holders = lock.holders.filter((e) => !e.expired);
  const others = lock.holders.filter((e) => e.expired).concat(lock.other || []);
  h2.append(holders.length ? el('span', 'state held', 'held') : el('span', 'state free', 'free'));
  card.append(h2);
  if (holders.length === 0) card.append(el('p', 'empty', 'No holder.'));
  for (const e of holders) card.append(holderBlock(lock, e));
  if (lock.waiters.length > 0) {
    card.append(el('h3', '', 'waiting, in serving order (' + lock.waiters.length + ')'));
    card.append(entryList('queue', lock.waiters, 'waiting'));
  }
  if (others.length > 0) {
    card.append(el('h3', '', 'taking no part (' + others.length + ')'));
    card.append(entryList('other', others, 'seen'));
  }
  for (const n of lock.notes || []) card.append(el('p', 'note', n));
  return card;
}

let lastTime = 0;

function render(s) {
  lastTime = Date.parse(s.time);
  $('backend').textContent = s.backend;
  $('engine').textContent = s.engine;
  $('updated').textContent = new Date(lastTime).toLocaleTimeString();
  setStatus(s.up ? 'live' : 'down');
  const err = $('error');
  err.hidden = !s.error;
  err.textContent = s.error || '';
  const cards = s.locks.map(lockCard);
  if (cards.length === 0) cards.push(el('p', 'empty', 'No locks under the names given.'));
  $('locks').replaceChildren(...cards);
}

function setStatus(text) {
  const p = $('status');
  p.textContent = text;
  p.className = 'pill ' + text;
}

fetch('api/locks')
  .then((r) => {
    // With --token-file, a page without the session cookie (never logged
    // in, or the token changed) goes to the login page.
    if (r.status === 401) location.replace('login');
    return r.json();
  })
  .then(render)
  .catch(() => setStatus('stale'));

const events = new EventSource('events');
events.onmessage = (ev) => render(JSON.parse(ev.data));
events.onerror = () => setStatus('stale');
