// relay's live view: one more client of the daemon's documented API, with
// the session cookie in place of the token. Everything a contact wrote (and
// every file name) is put on the page as text (textContent, DOM nodes),
// never parsed as markup.
'use strict';

(() => {
  const EVENT_KINDS = ['created', 'transition', 'message_in', 'media', 'message_out', 'message_status', 'todo',
    'question', 'answer', 'recovered'];
  const STATES = ['CREATED', 'QUEUED', 'ACTIVE', 'WAITING_FOR_REPLY', 'WAITING_FOR_AGENT', 'HEARTBEAT_SCHEDULED',
    'PAUSED', 'NEEDS_HUMAN_INTERVENTION', 'COMPLETED', 'ABANDONED', 'FAILED'];
  const PAGE_SIZE = 25;
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

  const view = () => document.getElementById('view');
  const state = { seq: 0, events: null, route: null, refreshTimer: null, cursors: [], next: null, loads: 0,
    actionError: '', stick: true };

  // ---- building the page: elements and text, never markup ----

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === 'class') node.className = value;
      else if (name === 'text') node.textContent = value;
      else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  function notice(text, kind) {
    const box = document.getElementById('notice');
    box.textContent = text || '';
    box.dataset.kind = kind || 'error';
    box.hidden = !text;
  }

  function setLive(status, words) {
    const live = document.getElementById('live');
    live.dataset.state = status;
    live.textContent = words;
  }

  // ---- the API ----

  class ApiError extends Error {
    constructor(status, body) {
      super(body && body.error ? body.error : `the daemon answered ${status}`);
      this.status = status;
      this.body = body;
    }
  }

  async function api(method, path, body, contentType) {
    const options = { method, credentials: 'same-origin', headers: {}, cache: 'no-store' };
    if (body !== undefined) {
      options.headers['Content-Type'] = contentType || 'application/json';
      options.body = contentType ? body : JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, options);
    } catch (e) {
      throw new ApiError(0, { error: 'the daemon does not answer: is it running? (`relay start`)' });
    }
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!response.ok) {
      const error = new ApiError(response.status, data);
      if (response.status === 401) signedOut();
      throw error;
    }
    return { data, headers: response.headers };
  }

  function signedOut() {
    notice('Not signed in, or the session has ended (it ends when the daemon restarts, or after 12 hours). '
      + 'Run `relay ui` in a terminal on this machine for a new sign-in address, and open it here.');
    setLive('off', 'signed out');
    if (state.events) { state.events.close(); state.events = null; }
  }

  // The cursor of a `Link: <...>; rel="next"` header, if there.
  function nextCursor(headers) {
    const link = headers.get('Link');
    const match = link && link.match(/<([^>]*)>;\s*rel="next"/);
    if (!match) return null;
    return new URL(match[1], location.origin).searchParams.get('cursor');
  }

  // ---- time ----

  const operatorZone = Intl.DateTimeFormat().resolvedOptions().timeZone;

  function clock(at, zone) {
    try {
      return new Intl.DateTimeFormat(undefined, { timeZone: zone, month: 'short', day: 'numeric', hour: '2-digit',
        minute: '2-digit' }).format(new Date(at));
    } catch (e) {
      return new Date(at).toISOString();
    }
  }

  // "14:02 your time · 10:02 America/Santiago", or one of them when the zones are one.
  function times(at, contactZone) {
    const mine = `${clock(at, operatorZone)} your time`;
    if (!contactZone || contactZone === operatorZone) return mine;
    return `${mine} · ${clock(at, contactZone)} ${contactZone}`;
  }

  // ---- what a conversation waits for ----

  function waitsFor(c) {
    const zone = c.contact_time ? c.contact_time.time_zone : null;
    const until = c.next_send_at ? ` until ${times(c.next_send_at, zone)}` : '';
    if (c.pending_question) {
      return `your answer: ${c.pending_question.question || c.pending_question.reason}`;
    }
    if (c.state === 'NEEDS_HUMAN_INTERVENTION') return `you: ${c.intervention_reason || 'a person is needed'}`;
    if (c.waiting_for === 'quiet_hours') return `quiet hours where the contact is${until}`;
    if (c.waiting_for === 'reach_out_lock') return `WhatsApp's reach-out lock${until}`;
    if (c.waiting_for === 'new_contact_cap') return `the day's cap on first messages${until}`;
    if (c.channel_blocked) return `the channel: ${c.channel_blocked}`;
    switch (c.state) {
      case 'QUEUED': return "the contact's earlier conversation to end";
      case 'PAUSED': return 'you to resume it';
      case 'WAITING_FOR_REPLY':
      case 'HEARTBEAT_SCHEDULED':
        return c.next_heartbeat_at ? `the contact (follow-up ${times(c.next_heartbeat_at, zone)})` : 'the contact';
      case 'ACTIVE':
      case 'WAITING_FOR_AGENT':
      case 'CREATED':
        return 'the agent';
      case 'COMPLETED':
      case 'ABANDONED':
        return `nothing: ended${c.outcome ? ` (${c.outcome})` : ''}`;
      case 'FAILED': return `nothing: failed${c.failure_reason ? ` (${c.failure_reason})` : ''}`;
      default: return '';
    }
  }

  function todosDone(c) {
    const done = c.todos.filter((t) => t.status === 'completed' || t.status === 'skipped').length;
    return `${done}/${c.todos.length}`;
  }

  function badge(s) {
    return el('span', { class: `state state-${s.toLowerCase()}`, text: s.replaceAll('_', ' ').toLowerCase() });
  }

  // ---- routes: #?state=..&contact=.. (the list), #c/<id> (a conversation) ----

  function route() {
    const hash = location.hash.replace(/^#/, '');
    if (hash.startsWith('c/')) {
      const id = decodeURIComponent(hash.slice(2));
      return { page: 'chat', id };
    }
    const params = new URLSearchParams(hash.replace(/^\?/, ''));
    return { page: 'list', state: params.get('state') || '', contact: params.get('contact') || '' };
  }

  function listHash(filters) {
    const params = new URLSearchParams();
    if (filters.state) params.set('state', filters.state);
    if (filters.contact) params.set('contact', filters.contact);
    const query = params.toString();
    return query ? `#?${query}` : '#';
  }

  async function render() {
    state.route = route();
    state.actionError = '';
    notice('');
    if (state.route.page === 'chat') {
      await renderChat(state.route.id);
    } else {
      state.cursors = [];
      state.next = null;
      await renderList(null);
    }
  }

  // ---- the list ----

  async function renderList(cursor) {
    const r = state.route;
    const load = ++state.loads;
    state.current = cursor; // the page asked for: a live refresh reads this one again
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (r.state) query.set('state', r.state);
    if (r.contact) query.set('contact', r.contact);
    if (cursor) query.set('cursor', cursor);
    document.getElementById('where').textContent = 'Conversations';
    document.title = 'relay: conversations';
    let page;
    try {
      page = await api('GET', `/instances?${query}`);
    } catch (e) {
      if (load !== state.loads) return;
      view().replaceChildren(filtersForm(r), el('p', { class: 'error', id: 'list-error', text: e.message }));
      return;
    }
    if (state.route !== r || load !== state.loads) return; // a later load shows instead
    state.next = nextCursor(page.headers);
    const remaining = Number(page.headers.get('Relay-Remaining') || '0');
    const rows = page.data.map(row);
    const table = el('table', { class: 'conversations', id: 'conversations' },
      el('thead', {}, el('tr', {}, ['State', 'Contact', 'Objective', 'Todos', 'Waits for', 'Updated']
        .map((h) => el('th', { text: h })))),
      el('tbody', {}, rows));
    const empty = page.data.length === 0
      ? el('p', { class: 'muted', id: 'empty', text: r.state || r.contact
        ? 'No conversation matches these filters.'
        : 'No conversations yet: `relay create` starts one.' })
      : null;
    const pager = el('nav', { class: 'pager' },
      el('button', { type: 'button', id: 'first-page', disabled: !cursor, onclick: () => { state.cursors = []; renderList(null); } }, 'First page'),
      el('button', { type: 'button', id: 'previous-page', disabled: !cursor, onclick: () => renderList(state.cursors.pop() || null) }, 'Previous'),
      el('span', { class: 'muted', id: 'remaining', text: remaining ? `${remaining} more` : '' }),
      el('button', { type: 'button', id: 'next-page', disabled: !state.next, onclick: () => { state.cursors.push(cursor); renderList(state.next); } }, 'Next page'));
    view().replaceChildren(filtersForm(r), empty || table, cursor || state.next ? pager : null);
  }

  function row(c) {
    const open = () => { location.hash = `c/${c.id}`; };
    const last = c.last_contact_message
      ? el('div', { class: 'last', text: c.last_contact_message.untrusted_contact_text }) : null;
    return el('tr', { 'data-id': c.id, 'data-state': c.state, class: 'row', tabindex: '0', onclick: open,
      onkeydown: (e) => { if (e.key === 'Enter') open(); } },
    el('td', {}, badge(c.state)),
    el('td', { class: 'contact', text: c.target_contact }),
    el('td', { class: 'objective' }, el('a', { href: `#c/${c.id}`, text: c.objective }), last),
    el('td', { class: 'todos', text: todosDone(c) }),
    el('td', { class: 'waits', text: waitsFor(c) }),
    el('td', { class: 'updated', text: clock(c.updated_at, operatorZone) }));
  }

  function filtersForm(r) {
    const select = el('select', { id: 'filter-state', name: 'state' },
      el('option', { value: '', text: 'every state' }),
      STATES.map((s) => el('option', { value: s, selected: r.state === s, text: s })));
    const contact = el('input', { id: 'filter-contact', name: 'contact', type: 'search', value: r.contact,
      placeholder: '+56912345678', autocomplete: 'off' });
    return el('form', { class: 'filters', id: 'filters', onsubmit: (e) => {
      e.preventDefault();
      location.hash = listHash({ state: select.value, contact: contact.value.trim() });
    } },
    el('label', {}, 'State ', select), el('label', {}, 'Contact ', contact),
    el('button', { type: 'submit', id: 'filter-apply' }, 'Filter'),
    el('a', { href: '#', class: 'clear' }, 'Clear'));
  }

  // ---- a conversation ----

  async function loadTranscript(id) {
    const messages = [];
    let cursor = null;
    for (;;) {
      const query = new URLSearchParams({ limit: '1000' });
      if (cursor) query.set('cursor', cursor);
      const page = await api('GET', `/instances/${encodeURIComponent(id)}/transcript?${query}`);
      messages.push(...page.data);
      cursor = nextCursor(page.headers);
      if (!cursor) return messages;
    }
  }

  async function renderChat(id) {
    const r = state.route;
    const load = ++state.loads;
    let c;
    let messages;
    try {
      c = (await api('GET', `/instances/${encodeURIComponent(id)}`)).data;
      messages = await loadTranscript(c.id);
    } catch (e) {
      if (load !== state.loads) return;
      view().replaceChildren(el('p', {}, el('a', { href: '#', text: '← Conversations' })),
        el('p', { class: 'error', id: 'chat-error', text: e.message }));
      return;
    }
    if (state.route !== r || load !== state.loads) return; // a later load shows instead
    state.chat = c;
    document.getElementById('where').textContent = c.target_contact;
    document.title = `relay: ${c.target_contact}`;
    const page = chatPage(c);
    page.querySelector('#chat-head').replaceChildren(chatHeader(c));
    // The question's form stays while it is the same question: what is typed in it stays too.
    const slot = page.querySelector('#question-slot');
    const asked = c.pending_question ? c.pending_question.id : '';
    if (slot.dataset.question !== asked) {
      slot.replaceChildren(...[question(c)].filter(Boolean));
      slot.dataset.question = asked;
    }
    page.querySelector('#side').replaceChildren(todos(c), history(c), budget(c));
    updateMessages(c, messages);
    stickToBottom();
  }

  // The page of conversation `c`: made once, then its parts updated live
  // (the composer is never remade: what is typed in it stays).
  function chatPage(c) {
    const shown = document.querySelector('.chat-page');
    if (shown && shown.dataset.id === c.id) return shown;
    const list = el('ol', { class: 'messages', id: 'messages' });
    list.addEventListener('scroll', () => {
      state.stick = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    });
    state.stick = true;
    const page = el('div', { class: 'chat-page', 'data-id': c.id },
      el('div', { id: 'chat-head' }), el('div', { id: 'question-slot' }),
      el('div', { class: 'columns' },
        el('section', { class: 'chat' }, list, composer(c)),
        el('aside', { class: 'side', id: 'side' })));
    view().replaceChildren(page);
    return page;
  }

  // Keeps the newest message in view, as long as the operator has not scrolled up.
  function stickToBottom() {
    const list = document.getElementById('messages');
    if (list && state.stick) list.scrollTop = list.scrollHeight;
  }

  function chatHeader(c) {
    const act = (name) => el('button', { type: 'button', id: `action-${name}`,
      onclick: () => action(c, name, `/instances/${c.id}/${name}`) }, name[0].toUpperCase() + name.slice(1));
    const zone = c.contact_time ? c.contact_time.time_zone : null;
    return el('div', { class: 'chat-head' },
      el('p', {}, el('a', { href: '#', id: 'back', text: '← Conversations' })),
      el('h2', {}, badge(c.state), ' ', el('span', { class: 'contact', text: c.target_contact }),
        zone ? el('span', { class: 'muted', text: ` (${zone})` }) : null),
      el('p', { class: 'objective', id: 'objective', text: c.objective }),
      el('p', { class: 'waits', id: 'waits-for' }, el('strong', {}, 'Waits for: '), waitsFor(c)),
      c.summary ? el('p', { class: 'summary', text: `Summary: ${c.summary}` }) : null,
      el('div', { class: 'actions' }, act('pause'), act('resume'), act('cancel')),
      el('p', { class: 'error', id: 'action-error', role: 'alert', text: state.actionError }));
  }

  // The last action's refusal stays shown across live refreshes, until the next action.
  function showActionError(text) {
    state.actionError = text;
    const shown = document.getElementById('action-error');
    if (shown) shown.textContent = text;
  }

  async function action(c, name, path, body, contentType) {
    showActionError('');
    try {
      const done = await api('POST', path, body, contentType);
      scheduleRefresh();
      return done;
    } catch (e) {
      showActionError(`${name}: ${e.message}`);
      return null;
    }
  }

  function question(c) {
    const q = c.pending_question;
    if (!q) return null;
    const text = el('textarea', { id: 'answer-text', rows: '2', placeholder: 'Your answer (it goes to the agent, not the contact)' });
    return el('form', { class: 'question', id: 'question', onsubmit: async (e) => {
      e.preventDefault();
      if (await action(c, 'answer', `/instances/${c.id}/answer`, { answer: text.value })) text.value = '';
    } },
    el('p', {}, el('strong', {}, `The agent asks (${q.id}): `), el('span', { id: 'question-text', text: q.question || q.reason })),
    q.question ? el('p', { class: 'muted', text: `Why: ${q.reason}` }) : null,
    text, el('button', { type: 'submit', id: 'answer-send' }, 'Answer'));
  }

  function composer(c) {
    const text = el('textarea', { id: 'send-text', rows: '2', placeholder: 'Write to the contact as the operator' });
    const file = el('input', { id: 'send-file', type: 'file' });
    const sendText = async (e) => {
      e.preventDefault();
      if (await action(c, 'send', `/instances/${c.id}/send`, { message: text.value })) text.value = '';
    };
    const sendFile = async () => {
      const chosen = file.files && file.files[0];
      if (!chosen) {
        showActionError('send file: choose a file first');
        return;
      }
      const staged = await action(c, 'send file', '/media', chosen, 'application/octet-stream');
      if (!staged) return;
      const sent = await action(c, 'send file', `/instances/${c.id}/send`,
        { file: { upload_id: staged.data.upload_id, name: chosen.name } });
      if (sent) file.value = '';
    };
    return el('form', { class: 'composer', id: 'composer', onsubmit: sendText },
      text, el('button', { type: 'submit', id: 'send-message' }, 'Send'),
      el('span', { class: 'file' }, file, el('button', { type: 'button', id: 'send-file-button', onclick: sendFile }, 'Send file')));
  }

  const ROLE_NAMES = { contact: 'contact', agent: 'agent', manual: 'you (operator)', system: 'relay' };
  const MARKS = { pending: '🕓 sending', sent: '✓ sent', delivered: '✓✓ delivered', read: '✓✓ read',
    played: '✓✓ played', unconfirmed: '? unconfirmed', failed: '✗ not sent' };

  // The bubbles, each remade only when its message changed: a voice note
  // that plays keeps playing while the page updates around it.
  function updateMessages(c, messages) {
    const list = document.getElementById('messages');
    const zone = c.contact_time ? c.contact_time.time_zone : null;
    const evidence = new Map();
    for (const todo of c.todos) {
      for (const e of todo.evidence || []) {
        if (!evidence.has(e.message_id)) evidence.set(e.message_id, []);
        evidence.get(e.message_id).push(todo);
      }
    }
    const kept = new Map([...list.children].map((li) => [li.id, li]));
    const bubbles = messages.map((m) => {
      const proves = evidence.get(m.id) || [];
      const signature = JSON.stringify([m, proves.map((t) => [t.id, t.text]), zone]);
      const old = kept.get(`m-${m.id}`);
      if (old && old.dataset.signature === signature) return old;
      const made = bubble(c, m, zone, proves);
      made.dataset.signature = signature;
      return made;
    });
    const scrolled = list.scrollTop;
    list.replaceChildren(...(bubbles.length ? bubbles : [el('li', { class: 'muted', text: 'No messages yet.' })]));
    list.scrollTop = scrolled;
  }

  function bubble(c, m, zone, proves) {
    const parts = [];
    parts.push(el('div', { class: 'who', text: ROLE_NAMES[m.role] || m.role }));
    if (m.act) parts.push(el('div', { class: 'act', text: actWords(m.act.kind) }));
    if (m.media) parts.push(media(c, m));
    const text = m.media ? (m.media.caption || '') : m.content;
    if (text) parts.push(el('div', { class: 'text', text }));
    if (m.withdrawn) parts.push(el('div', { class: 'withdrawn', text: `(${m.withdrawn} by the contact)` }));
    for (const todo of proves) {
      parts.push(el('div', { class: 'evidence', text: `evidence for todo ${todo.id}: ${todo.text}` }));
    }
    const meta = [times(m.timestamp, zone)];
    if (m.send_status) meta.push(MARKS[m.send_status] || m.send_status);
    if (m.outside_relay) meta.push('written outside relay');
    parts.push(el('div', { class: `meta mark-${m.send_status || 'none'}`, text: meta.join(' · ') }));
    if (m.delivery_error) parts.push(el('div', { class: 'error', text: m.delivery_error }));
    return el('li', { class: `bubble from-${m.role}${proves.length ? ' proves' : ''}`, id: `m-${m.id}`,
      'data-role': m.role }, parts);
  }

  function actWords(kind) {
    return { reaction: 'reacted', reaction_removed: 'took a reaction back', reply: 'replied', edit: 'edited a message',
      deletion: 'deleted a message', call: 'called' }[kind] || kind;
  }

  function media(c, m) {
    const f = m.media;
    const url = `/instances/${c.id}/messages/${m.id}/media`;
    const box = el('div', { class: `media media-${f.kind}`, 'data-status': f.status });
    if (f.status !== 'stored') {
      const why = { pending: 'arriving…', too_large: 'too large to fetch', failed: 'could not be fetched',
        pruned: 'removed after media.keep' }[f.status] || f.status;
      box.append(el('div', { class: 'muted', text: `${f.kind.replaceAll('_', ' ')} ${f.reference}: ${why}${f.error ? ` (${f.error})` : ''}` }));
      return box;
    }
    if (f.kind === 'photo' || f.kind === 'sticker') {
      box.append(el('img', { src: url, alt: `photo ${f.reference}`, onload: stickToBottom }));
    } else if (f.kind === 'voice_note' || f.kind === 'audio') {
      box.append(el('audio', { controls: true, preload: 'none', src: url }));
    } else if (f.kind === 'video' || f.kind === 'video_note') {
      box.append(el('video', { controls: true, preload: 'none', src: url }));
    }
    if (f.transcript_status === 'done' && f.transcript) {
      box.append(el('div', { class: 'transcript' }, el('span', { class: 'label', text: 'Transcript (machine, may mishear): ' }),
        el('span', { class: 'transcript-text', text: f.transcript })));
    } else if (f.transcript_status && f.transcript_status !== 'done') {
      box.append(el('div', { class: 'muted', text: `not transcribed: ${f.transcript_status.replaceAll('_', ' ')}` }));
    }
    const size = f.bytes ? ` (${Math.max(1, Math.round(f.bytes / 1024))} KB)` : '';
    const name = f.file_name || `${f.kind.replaceAll('_', ' ')} ${f.reference}`;
    box.append(el('a', { class: 'download', href: url, download: '', text: `Download ${name}${size}` }));
    return box;
  }

  function todos(c) {
    return el('section', { class: 'todos', id: 'todos' }, el('h3', { text: `Todos ${todosDone(c)}` }),
      el('ol', {}, c.todos.map((t) => el('li', { class: `todo todo-${t.status}`, 'data-todo': t.id },
        el('div', {}, el('span', { class: 'status', text: t.status.replaceAll('_', ' ') }), ' ', t.text),
        t.value !== undefined && t.value !== null
          ? el('div', { class: 'value' }, 'Value: ', el('code', { text: JSON.stringify(t.value) }),
            t.check ? el('span', { class: 'muted', text: ` (${t.check})` }) : null)
          : (t.answer ? el('div', { class: 'value', text: `Answer: ${t.answer}` }) : null),
        (t.evidence || []).map((e) => el('div', { class: 'evidence-link' },
          el('a', { href: `#c/${c.id}`, onclick: (ev) => { ev.preventDefault(); showMessage(e.message_id); } },
            `evidence: “${e.untrusted_contact_text}”`),
          e.changed ? el('span', { class: 'muted', text: ` (${e.changed} since)` }) : null))))));
  }

  function showMessage(id) {
    const target = document.getElementById(`m-${id}`);
    if (!target) return;
    target.scrollIntoView({ block: 'center' });
    target.classList.add('flash');
    setTimeout(() => target.classList.remove('flash'), 1500);
  }

  function history(c) {
    return el('section', { class: 'history', id: 'history' }, el('h3', { text: 'History' }),
      el('ol', {}, c.history.map((h) => el('li', {},
        el('span', { class: 'muted', text: `${clock(h.timestamp, operatorZone)} ` }),
        `${h.from_state || '—'} → ${h.to_state} (${h.trigger})`,
        h.reason ? el('div', { class: 'muted', text: h.reason }) : null))));
  }

  function budget(c) {
    const b = c.budget || {};
    const u = c.usage || {};
    const rows = [
      ['Turns', `${c.turns_taken}${b.max_turns ? ` of ${b.max_turns}` : ''}`],
      ['Tokens', `${(u.input_tokens || 0) + (u.output_tokens || 0)}${b.max_tokens ? ` of ${b.max_tokens}` : ''}`],
      ['Model calls', String(u.model_calls || 0)],
    ];
    if (b.expires_at) rows.push(['Ends by', clock(b.expires_at, operatorZone)]);
    if (b.reached) rows.push(['Reached', b.reached]);
    return el('section', { class: 'budget', id: 'budget' }, el('h3', { text: 'Budget used' }),
      el('dl', {}, rows.map(([k, v]) => [el('dt', { text: k }), el('dd', { text: v })])));
  }

  // ---- live: the event stream ----

  function scheduleRefresh() {
    clearTimeout(state.refreshTimer);
    state.refreshTimer = setTimeout(refresh, 150);
  }

  async function refresh() {
    const r = state.route;
    if (!r) return;
    if (r.page === 'chat') await renderChat(r.id);
    else await renderList(state.current || null);
  }

  // One stream of every event after the last one seen; when it breaks (the
  // daemon restarting, a sleep), it is opened again once the daemon
  // answers, and the page is read again.
  function follow() {
    const source = new EventSource(`/events?follow=true&after=${state.seq}`);
    state.events = source;
    source.onopen = () => setLive('on', 'live');
    source.onerror = () => {
      source.close();
      if (state.events !== source) return;
      state.events = null;
      setLive('off', 'reconnecting');
      setTimeout(reconnect, 2000);
    };
    const seen = (e) => {
      let event;
      try { event = JSON.parse(e.data); } catch (err) { return; }
      state.seq = Math.max(state.seq, event.seq || 0);
      const r = state.route;
      if (!r || r.page === 'list' || event.instance_id === (state.chat && state.chat.id)) scheduleRefresh();
    };
    for (const kind of EVENT_KINDS) source.addEventListener(kind, seen);
  }

  async function reconnect() {
    try {
      // The page is read again whole: events missed meanwhile need no replay.
      state.seq = (await api('GET', '/status')).data.last_event_seq || state.seq;
    } catch (e) {
      if (e.status === 401) return; // signed out: the notice says what to do
      setLive('off', 'daemon not answering');
      setTimeout(reconnect, 2000);
      return;
    }
    follow();
    scheduleRefresh();
  }

  async function start() {
    try {
      const status = (await api('GET', '/status')).data;
      state.seq = status.last_event_seq || 0;
    } catch (e) {
      if (e.status !== 401) notice(e.message);
      view().replaceChildren(el('p', { class: 'muted', text: 'Nothing to show until signed in.' }));
      return;
    }
    window.addEventListener('hashchange', render);
    await render();
    follow();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
