//! One case: the steps run against a fresh engine (restarts included), a
//! model of what must hold, and the checks after every step.

use super::*;

/// What a key was first used for, and what it produced.
#[derive(Debug, Clone)]
pub(super) enum KeyUse {
    Create { request: Box<CreateInstanceRequest>, id: Uuid },
    Send { instance: Uuid, text: String },
}

/// What the test has seen so far, to compare each step with the last.
#[derive(Default)]
pub(super) struct Model {
    /// Every conversation a create made, oldest first.
    pub(super) ids: Vec<Uuid>,
    pub(super) keys: HashMap<u8, KeyUse>,
    /// Each instance as it was at the last check.
    pub(super) seen: HashMap<Uuid, ConversationRecord>,
    pub(super) transcripts: HashMap<Uuid, Vec<TranscriptMessage>>,
}

pub(super) struct Run {
    pub(super) home: Home,
    pub(super) store: Store,
    pub(super) script: Arc<Script>,
    pub(super) engine: Engine,
    pub(super) channel: Arc<FakeChannel>,
    /// The channels of the engines stopped so far (what they delivered counts too).
    pub(super) earlier_channels: Vec<Arc<FakeChannel>>,
    pub(super) agent: Arc<TestAgent>,
    pub(super) model: Model,
}

/// Short reply window and heartbeat bounds, so everything happens within the waits generated.
pub(super) fn settings() -> Settings {
    Settings {
        reply_window: Duration::from_millis(1_500),
        scheduled_heartbeat_bounds: (Duration::from_secs(1), Duration::from_secs(5)),
        delivery_timeout: Duration::from_secs(600),
        // The properties hold at any hour, for any number of contacts.
        courtesy: crate::support::engine::any_hour().courtesy,
        budget: Default::default(),
        media: Default::default(),
        events_keep: Duration::from_secs(90 * 86_400),
        transcription_retries: (0, Duration::from_millis(10)),
        verify_answers: true,
    }
}

pub(super) fn boot(home: &Home, script: &Arc<Script>) -> Checked<(Engine, Arc<FakeChannel>, Arc<TestAgent>)> {
    let channel = Arc::new(channel(script.clone()));
    let agent = agent(script.clone());
    let store = Store::open(home).map_err(|e| e.to_string())?;
    let engine = Engine::start(store, channel.clone(), agent.clone(), settings()).map_err(|e| e.to_string())?;
    Ok((engine, channel, agent))
}

pub(super) fn request(contact: usize, interval_s: u64, max_followups: u32) -> CreateInstanceRequest {
    CreateInstanceRequest {
        objective: "Confirm the delivery".into(),
        target_contact: CONTACTS[contact].into(),
        todos: vec![NewTodo::new("delivery day")],
        heartbeat_config: Some(HeartbeatOverrides {
            interval_ms: Some(interval_s * 1_000),
            max_followups: Some(max_followups),
        }),
        ..Default::default()
    }
}

pub(super) fn key_name(slot: u8) -> String {
    format!("key-{slot}")
}

/// The engine's own refusal of `event` on `instance`, if the table refuses it.
pub(super) fn refused(instance: &ConversationRecord, event: Event) -> bool {
    fsm::next(instance.state, event, instance.previous_state).is_err()
}

impl Run {
    pub(super) fn start(home: Home, script: Arc<Script>) -> Checked<Run> {
        let (engine, channel, agent) = boot(&home, &script)?;
        let store = Store::open(&home).map_err(|e| e.to_string())?;
        Ok(Run { home, store, script, engine, channel, earlier_channels: Vec::new(), agent, model: Model::default() })
    }

    pub(super) fn pick(&self, pick: usize) -> Option<Uuid> {
        (!self.model.ids.is_empty()).then(|| self.model.ids[pick % self.model.ids.len()])
    }

    pub(super) fn get(&self, id: Uuid) -> Checked<ConversationRecord> {
        self.engine.record(&id.to_string()).map_err(|e| format!("get {id}: {e}"))
    }

    pub(super) fn transcript(&self, id: Uuid) -> Checked<Vec<TranscriptMessage>> {
        self.store.read_transcript(id).map_err(|e| format!("transcript of {id}: {e}"))
    }

    /// The conversation that holds `contact`, as the engine shows it.
    pub(super) fn holder(&self, contact: usize) -> Option<ConversationRecord> {
        self.engine
            .list(&[], Some(&self::contact(contact)), None, usize::MAX)
            .expect("the conversations read")
            .items
            .into_iter()
            .find(|i| i.holds_contact())
            .map(|i| self.engine.record(&i.id.to_string()).expect("a listed conversation has a record"))
    }

    pub(super) async fn step(&mut self, op: &Op) -> Checked {
        STEPS.fetch_add(1, Ordering::Relaxed);
        match *op {
            Op::Create { contact, interval_s, max_followups, key } => {
                self.create(request(contact, interval_s, max_followups), key).await?
            }
            Op::Pause(pick) => self.operate(pick, Event::Pause).await?,
            Op::Resume(pick) => self.operate(pick, Event::Resume).await?,
            Op::Cancel(pick) => self.operate(pick, Event::Cancel).await?,
            Op::Send { pick, key } => self.send(pick, key).await?,
            Op::Say { contact } => self.say(contact).await?,
            Op::Wait { ms } => tokio::time::sleep(Duration::from_millis(ms)).await,
            Op::Jump { ms } => tokio::time::advance(Duration::from_millis(ms)).await,
            Op::ChannelBack => self.channel.unblock(),
            Op::LateRefusal(pick) => {
                let taken = self.channel.taken();
                if !taken.is_empty() {
                    self.channel.refused_later(taken[pick % taken.len()].clone(), "463").await;
                }
            }
            Op::Receipt(pick, status) => {
                let taken = self.channel.taken();
                if !taken.is_empty() {
                    use relay::api::SendStatus::{Delivered, Played, Read};
                    let status = [Delivered, Read, Played][status];
                    self.channel.receipt(taken[pick % taken.len()].clone(), status).await;
                }
            }
            Op::Restart => {
                self.engine.shutdown().await;
                // What the stopped engine shows is what is on disk.
                self.check_view()?;
                TURNS.fetch_add(self.agent.kinds().len() as u64, Ordering::Relaxed);
                let (engine, channel, agent) = boot(&self.home, &self.script)?;
                (self.engine, self.agent) = (engine, agent);
                self.earlier_channels.push(std::mem::replace(&mut self.channel, channel));
            }
        }
        settle(&self.engine).await?;
        self.check()
    }

    pub(super) async fn create(&mut self, mut request: CreateInstanceRequest, key: Option<Key>) -> Checked {
        let earlier = key.and_then(|k| self.model.keys.get(&k.slot).cloned());
        if let (Some(Key { retry: true, .. }), Some(KeyUse::Create { request: first, .. })) = (key, &earlier) {
            request = (**first).clone();
        }
        let holder = self.holder(contact_index(&request.target_contact));
        let created = match key {
            None => self.engine.create(request.clone()).await.map_err(|e| format!("create: {e}"))?,
            Some(k) => {
                let result = self.engine.create_once(&key_name(k.slot), request.clone()).await;
                match (earlier, result) {
                    (Some(KeyUse::Create { request: first, id }), Ok(once)) if *first == request => {
                        // Invariant 9: a retry returns the first conversation and makes none.
                        ensure!(once.replayed && once.value.id == id, "retried create made {once:?}, not {id}");
                        return Ok(());
                    }
                    (Some(_), Err(EngineError::KeyReused(_))) => return Ok(()),
                    (None, Ok(once)) => {
                        ensure!(!once.replayed, "a new key replayed {once:?}");
                        self.model
                            .keys
                            .insert(k.slot, KeyUse::Create { request: Box::new(request.clone()), id: once.value.id });
                        once.value
                    }
                    (earlier, result) => return Err(format!("create with {k:?} (used for {earlier:?}): {result:?}")),
                }
            }
        };
        ensure!(!self.model.ids.contains(&created.id), "create returned an existing conversation {}", created.id);
        // FIFO: a contact already held queues the newcomer.
        let expected = if holder.is_some() { State::Queued } else { State::Created };
        ensure!(created.state == expected, "created {:?} while the holder was {holder:?}", created.state);
        self.model.ids.push(created.id);
        Ok(())
    }

    /// Pause, resume or cancel: done exactly when the table allows it;
    /// refused otherwise, naming the state, and then nothing changes.
    pub(super) async fn operate(&mut self, pick: usize, event: Event) -> Checked {
        let Some(id) = self.pick(pick) else { return Ok(()) };
        let before = self.get(id)?;
        let transcript = self.transcript(id)?;
        let result = match event {
            Event::Pause => self.engine.pause(&id.to_string()).await,
            Event::Resume => self.engine.resume(&id.to_string()).await,
            _ => self.engine.cancel(&id.to_string()).await,
        };
        match result {
            Ok(after) => {
                ensure!(!refused(&before, event), "{event} was done in {}", before.state);
                ensure!(after.id == id, "{event} answered with another conversation");
                match event {
                    Event::Pause => ensure!(
                        after.state == State::Paused && after.previous_state == Some(before.state),
                        "pause from {} gave {} (previous {:?})",
                        before.state,
                        after.state,
                        after.previous_state
                    ),
                    Event::Resume => ensure!(after.state != State::Paused, "resume left it PAUSED"),
                    _ => ensure!(
                        after.state == State::Failed && after.failure_reason.as_deref() == Some("cancelled"),
                        "cancel gave {} ({:?})",
                        after.state,
                        after.failure_reason
                    ),
                }
            }
            Err(EngineError::Transition { id: refused_id, source }) => {
                ensure!(refused(&before, event), "{event} refused in {}, which the table allows", before.state);
                ensure!(
                    refused_id == id && source.state == before.state && source.event == event,
                    "refusal names {refused_id} {source} for {id} in {}",
                    before.state
                );
                self.unchanged(&before, &transcript)?;
            }
            Err(other) => return Err(format!("{event} on {id} in {}: {other}", before.state)),
        }
        Ok(())
    }

    /// A refused command changed nothing: in the engine, on disk, in the transcript.
    pub(super) fn unchanged(&self, before: &ConversationRecord, transcript: &[TranscriptMessage]) -> Checked {
        let disk = self.store.load_instances().map_err(|e| e.to_string())?.into_iter().find(|i| i.id == before.id);
        ensure!(self.get(before.id)? == *before, "a refused command changed the engine's view of {}", before.id);
        ensure!(disk.as_ref() == Some(before), "a refused command changed {} on disk", before.id);
        ensure!(self.transcript(before.id)? == transcript, "a refused command changed the transcript of {}", before.id);
        Ok(())
    }

    /// `relay send`, with or without a key.
    pub(super) async fn send(&mut self, pick: usize, key: Option<Key>) -> Checked {
        let Some(mut id) = self.pick(pick) else { return Ok(()) };
        let mut text = self.script.text("operator");
        let earlier = key.and_then(|k| self.model.keys.get(&k.slot).cloned());
        if let (Some(Key { retry: true, .. }), Some(KeyUse::Send { instance, text: first })) = (key, &earlier) {
            (id, text) = (*instance, first.clone());
        }
        let before = self.get(id)?;
        let transcript = self.transcript(id)?;
        let ready = self.channel.ready().is_ok();
        // The message a retried key made, if it went out (or may have).
        let done = match &earlier {
            Some(KeyUse::Send { instance, text: first }) if *instance == id && *first == text => {
                transcript.iter().find(|m| m.content == text && m.send_status != Some(SendStatus::Failed)).cloned()
            }
            _ => None,
        };
        let result = match key {
            None => self.engine.send(&id.to_string(), text.clone()).await.map(|m| (m, false)),
            Some(k) => {
                let result = self.engine.send_once(&key_name(k.slot), &id.to_string(), text.clone()).await;
                match &earlier {
                    None => {
                        self.model.keys.insert(k.slot, KeyUse::Send { instance: id, text: text.clone() });
                    }
                    Some(KeyUse::Send { instance, text: first }) if *instance == id && *first == text => {}
                    Some(other) => {
                        ensure!(
                            matches!(result, Err(EngineError::KeyReused(_))),
                            "key {k:?} used for {other:?} again for another send: {result:?}"
                        );
                        return Ok(());
                    }
                }
                result.map(|once| (once.value, once.replayed))
            }
        };
        if let Some(first) = done {
            // Invariant 9: a retry of a message that went out returns it and sends nothing.
            let replayed = result.as_ref().is_ok_and(|(m, replayed)| *replayed && *m == first);
            ensure!(replayed, "retried send of {first:?} gave {result:?}");
            return Ok(());
        }
        match result {
            Ok((message, replayed)) => {
                ensure!(!replayed, "replayed a send that never went out: {message:?}");
                ensure!(!refused(&before, Event::ManualSend), "send was done in {}", before.state);
                ensure!(
                    message.instance_id == id
                        && message.role == Role::Manual
                        && message.content == text
                        && message.send_status == Some(SendStatus::Sent),
                    "send answered {message:?}"
                );
                let recorded = self.transcript(id)?;
                ensure!(recorded.iter().any(|m| m.id == message.id), "sent {} but not in the transcript", message.id);
            }
            Err(EngineError::Transition { id: refused_id, source }) => {
                ensure!(
                    refused(&before, Event::ManualSend),
                    "send refused in {}, which the table allows",
                    before.state
                );
                ensure!(refused_id == id && source.state == before.state, "refusal names {source} in {}", before.state);
                self.unchanged(&before, &transcript)?;
            }
            Err(EngineError::Channel(error)) => {
                ensure!(!refused(&before, Event::ManualSend), "send tried in {}: {error}", before.state);
                if ready {
                    // Tried, and written down as failed.
                    let recorded = self.transcript(id)?;
                    let failed = recorded.iter().find(|m| m.content == text);
                    ensure!(
                        failed.is_some_and(|m| m.send_status == Some(SendStatus::Failed)),
                        "a failed send is recorded as {failed:?}"
                    );
                } else {
                    // Not even tried: nothing is written.
                    self.unchanged(&before, &transcript)?;
                }
            }
            Err(other) => return Err(format!("send to {id} in {}: {other}", before.state)),
        }
        Ok(())
    }

    /// A contact writes: the conversation holding them records it, else it is kept unrouted.
    pub(super) async fn say(&mut self, contact: usize) -> Checked {
        let text = self.script.text("contact");
        let holder = self.holder(contact);
        let unrouted = self.engine.unrouted_count();
        let delivery = self.engine.deliver(InboundMessage::new(self::contact(contact), text.clone())).await;
        match (&holder, &delivery) {
            (Some(holder), InboundOutcome::Delivered(id)) if *id == holder.id => {
                let recorded = self.transcript(*id)?;
                ensure!(
                    recorded.iter().any(|m| m.role == Role::Contact && m.content == text),
                    "a delivered message is not in the transcript"
                );
                // Whenever the contact writes, the follow-ups start over.
                ensure!(self.get(*id)?.follow_up_count == 0, "follow_up_count not reset by a contact message");
            }
            (None, InboundOutcome::NoConversation) => {
                ensure!(self.engine.unrouted_count() == unrouted + 1, "an unrouted message was not kept");
            }
            _ => return Err(format!("message for holder {:?} went {delivery:?}", holder.map(|h| h.id))),
        }
        Ok(())
    }

    // ---- invariants -----------------------------------------------------------

    /// Invariant 8: the engine shows exactly what is on disk.
    pub(super) fn check_view(&self) -> Checked<Vec<ConversationRecord>> {
        let disk = self.store.load_instances().map_err(|e| e.to_string())?;
        // Every conversation, in the disk's order (the list is newest first).
        let listed = self.engine.list(&[], None, None, usize::MAX).map_err(|e| e.to_string())?.items;
        let mut view = Vec::with_capacity(listed.len());
        for instance in listed {
            view.push(self.engine.record(&instance.id.to_string()).map_err(|e| e.to_string())?);
        }
        view.sort_by_key(|i| (i.created_at, i.id));
        if disk != view {
            let differs = disk.iter().zip(&view).find(|(d, v)| d != v);
            return Err(format!(
                "the engine's view is not what is on disk: {differs:#?} ({} vs {})",
                disk.len(),
                view.len()
            ));
        }
        invariants::count_check();
        Ok(disk)
    }

    pub(super) fn check(&mut self) -> Checked {
        let disk = self.check_view()?;
        // Invariant 9: every conversation comes from one create; none is lost or doubled.
        let ids: HashSet<Uuid> = disk.iter().map(|i| i.id).collect();
        let made: HashSet<Uuid> = self.model.ids.iter().copied().collect();
        ensure!(ids == made && disk.len() == made.len(), "on disk {ids:?}, created {made:?}");

        invariants::check_conversations(&disk, &self.model.seen)?;
        for theirs in invariants::by_contact(&disk).values() {
            invariants::check_settled(theirs, self.channel.ready().is_ok())?;
        }
        for instance in &disk {
            let now = self.transcript(instance.id)?;
            let before = self.model.transcripts.get(&instance.id).map(Vec::as_slice).unwrap_or_default();
            invariants::check_transcript(instance.id, before, &now)?;
            self.model.transcripts.insert(instance.id, now);
        }
        // Invariant 9: one key, at most one message (texts are unique, so
        // two messages would show as two ids with its text).
        for used in self.model.keys.values() {
            if let KeyUse::Send { instance, text } = used {
                let copies = self.model.transcripts[instance].iter().filter(|m| m.content == *text).count();
                ensure!(copies <= 1, "the key for {text:?} made {copies} messages");
            }
        }
        // Nothing reached a contact twice (every text is unique).
        let delivered: Vec<String> =
            self.earlier_channels.iter().chain([&self.channel]).flat_map(|channel| channel.sent()).collect();
        let unique: HashSet<&String> = delivered.iter().collect();
        ensure!(unique.len() == delivered.len(), "a message was delivered twice: {delivered:?}");

        let mut reached = REACHED.lock().unwrap();
        for e in disk.iter().flat_map(|i| &i.history) {
            let taken = (e.from_state, e.trigger.as_str().to_string());
            if !reached.contains(&taken) {
                reached.push(taken);
            }
        }
        drop(reached);
        self.model.seen = disk.into_iter().map(|i| (i.id, i)).collect();
        Ok(())
    }
}

/// Lets the engine do everything it can without time passing (plus a few
/// ms): each 1 ms sleep returns only after the runtime went idle, and three
/// quiet ones in a row mean every chain of events has run out.
pub(super) async fn settle(engine: &Engine) -> Checked {
    let changes = engine.subscribe();
    let mut last = *changes.borrow();
    let mut quiet = 0;
    for _ in 0..10_000 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        let now = *changes.borrow();
        if now == last {
            quiet += 1;
            if quiet == 3 {
                return Ok(());
            }
        } else {
            (last, quiet) = (now, 0);
        }
    }
    Err("the engine never settles".into())
}
