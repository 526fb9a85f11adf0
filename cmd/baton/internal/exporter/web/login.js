// The login of baton exporter --token-file. The token comes from the
// address's fragment (login#token=…: a fragment is never sent to a
// server, so no proxy or log sees it) or from the form; it goes once to
// POST login as a bearer token, and the exporter answers with an HttpOnly
// session cookie that the page's requests and event stream carry.
'use strict';

const msg = document.getElementById('msg');

async function login(token) {
  msg.textContent = '';
  let r;
  try {
    r = await fetch('login', { method: 'POST', headers: { Authorization: 'Bearer ' + token } });
  } catch (e) {
    msg.textContent = 'The exporter did not answer.';
    return;
  }
  if (r.ok) {
    location.replace('./');
    return;
  }
  msg.textContent = r.status === 401 ? 'That is not the exporter\'s token.' : 'Login failed: HTTP ' + r.status + '.';
}

// fromAddress logs in with the token of the fragment, if there is one,
// and takes it out of the address bar and the history at once.
function fromAddress() {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);
  if (token) login(token);
}

fromAddress();
// The fragment of an address typed on this page changes no document.
window.addEventListener('hashchange', fromAddress);

document.getElementById('login').addEventListener('submit', (ev) => {
  ev.preventDefault();
  login(document.getElementById('token').value.trim());
});
