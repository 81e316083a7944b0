//! A server's question asked of the person on the terminal: accept, decline or
//! cancel, then each field of the form, with its default offered.
//!
//! The form's fields are read from the request's schema (a flat object of primitive
//! fields, as elicitation allows): a boolean is a yes/no question, a string with
//! `enum` (or `oneOf` of `const`s) a choice, an array of such strings a multiple
//! choice, an integer or number a typed line, any other string a line. An optional
//! field left empty is left out. Every text that comes from the server is shown with
//! its control characters escaped, so a server cannot write to the terminal.

use dialoguer::{Confirm, Input, MultiSelect, Select, console::Term};
use mcp_runtime::model::{ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

use crate::output::printable;

/// The questions the form needs answered; the terminal's, or a script's in tests.
pub trait Person {
    /// One of `items` (`None`: the person gave up).
    fn choose(&self, prompt: &str, items: &[String], default: usize) -> Option<usize>;
    /// Some of `items`.
    fn choose_some(&self, prompt: &str, items: &[String], chosen: &[bool]) -> Option<Vec<usize>>;
    /// Yes or no.
    fn confirm(&self, prompt: &str, default: bool) -> Option<bool>;
    /// A line of text, checked by `valid` (empty allowed when `optional`).
    fn line(
        &self,
        prompt: &str,
        default: Option<String>,
        optional: bool,
        valid: &dyn Fn(&str) -> Result<(), String>,
    ) -> Option<String>;
}

/// The prompt of a link's question.
const OPEN_LINK: &str = "Open it in your browser?";

/// The person's answer to `server` asking them to open `url` (`message` says why):
/// `open` opens it when they agree. Only `http` and `https` links are offered.
pub fn ask_url(
    person: &dyn Person,
    open: &dyn Fn(&str) -> std::io::Result<()>,
    server: &str,
    message: &str,
    url: &str,
) -> ElicitResult {
    eprintln!(
        "server `{}` asks you to open a link: {}\n  {}",
        printable(server),
        printable(message),
        printable(url)
    );
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        eprintln!("mcp-runtime: declined: only http and https links are opened");
        return ElicitResult::new(ElicitationAction::Decline);
    }
    match person.confirm(OPEN_LINK, false) {
        Some(true) => {
            if let Err(error) = open(url) {
                eprintln!("mcp-runtime: no browser opened it ({error}): open the link above");
            }
            ElicitResult::new(ElicitationAction::Accept)
        }
        Some(false) => ElicitResult::new(ElicitationAction::Decline),
        None => ElicitResult::new(ElicitationAction::Cancel),
    }
}

/// The person's answer to `message` from `server` with the form `schema`.
pub fn ask(person: &dyn Person, server: &str, message: &str, schema: &Value) -> ElicitResult {
    eprintln!(
        "server `{}` asks: {}",
        printable(server),
        printable(message)
    );
    let actions = ["accept", "decline", "cancel"].map(str::to_owned);
    match person.choose("Answer", &actions, 0) {
        Some(0) => match form(person, schema) {
            Some(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            None => ElicitResult::new(ElicitationAction::Cancel),
        },
        Some(1) => ElicitResult::new(ElicitationAction::Decline),
        _ => ElicitResult::new(ElicitationAction::Cancel),
    }
}

/// The form's content, field by field; `None` when the person gave up.
fn form(person: &dyn Person, schema: &Value) -> Option<Map<String, Value>> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut content = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, field) in properties.into_iter().flatten() {
        let optional = !required.contains(&name.as_str());
        let title = field.get("title").and_then(Value::as_str).unwrap_or(name);
        let mut prompt = printable(title).into_owned();
        if let Some(description) = field.get("description").and_then(Value::as_str) {
            prompt.push_str(&format!(" ({})", printable(description)));
        }
        if let Some(value) = answer(person, &prompt, field, optional)? {
            content.insert(name.clone(), value);
        }
    }
    Some(content)
}

/// The answer to one field: `Some(None)` for an optional field left empty.
fn answer(
    person: &dyn Person,
    prompt: &str,
    field: &Value,
    optional: bool,
) -> Option<Option<Value>> {
    let default = field.get("default");
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    if kind == "boolean" {
        let default = default.and_then(Value::as_bool).unwrap_or(false);
        return person.confirm(prompt, default).map(|yes| Some(yes.into()));
    }
    if kind == "array" {
        let options = choices(field.get("items").unwrap_or(&Value::Null));
        let given: Vec<&str> = default
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let chosen: Vec<bool> = options
            .iter()
            .map(|(value, _)| given.contains(&value.as_str()))
            .collect();
        let labels: Vec<String> = options.iter().map(|(_, label)| label.clone()).collect();
        return person.choose_some(prompt, &labels, &chosen).map(|picked| {
            Some(Value::Array(
                picked
                    .into_iter()
                    .map(|index| options[index].0.clone().into())
                    .collect(),
            ))
        });
    }
    let options = choices(field);
    if !options.is_empty() {
        let labels: Vec<String> = options.iter().map(|(_, label)| label.clone()).collect();
        let first = default
            .and_then(Value::as_str)
            .and_then(|value| options.iter().position(|(option, _)| option == value))
            .unwrap_or(0);
        return person
            .choose(prompt, &labels, first)
            .map(|index| Some(options[index].0.clone().into()));
    }
    let shown_default = default.map(|value| match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    });
    let valid = |text: &str| -> Result<(), String> {
        if text.is_empty() {
            return if optional {
                Ok(())
            } else {
                Err("an answer is needed".to_owned())
            };
        }
        parse(kind, text).map(drop)
    };
    let text = person.line(prompt, shown_default, optional, &valid)?;
    if text.is_empty() {
        return Some(None);
    }
    parse(kind, &text).ok().map(Some)
}

/// The field's choices: `enum` values, or `oneOf`/`anyOf` `const`s with their titles.
fn choices(field: &Value) -> Vec<(String, String)> {
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .filter_map(Value::as_str)
            .map(|value| (value.to_owned(), printable(value).into_owned()))
            .collect();
    }
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|key| field.get(*key).and_then(Value::as_array))
        .flatten()
        .filter_map(|option| {
            let value = option.get("const")?.as_str()?;
            let title = option.get("title").and_then(Value::as_str).unwrap_or(value);
            Some((value.to_owned(), printable(title).into_owned()))
        })
        .collect()
}

/// `text` as a value of JSON type `kind`.
fn parse(kind: &str, text: &str) -> Result<Value, String> {
    match kind {
        "integer" => text
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "a whole number is needed".to_owned()),
        "number" => text
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(|number| serde_json::Number::from_f64(number).map(Value::Number))
            .ok_or_else(|| "a number is needed".to_owned()),
        _ => Ok(Value::String(text.to_owned())),
    }
}

/// The person at the terminal (stderr), through `dialoguer`.
pub struct Terminal;

impl Person for Terminal {
    fn choose(&self, prompt: &str, items: &[String], default: usize) -> Option<usize> {
        Select::new()
            .with_prompt(prompt)
            .items(items)
            .default(default)
            .interact_on_opt(&Term::stderr())
            .ok()
            .flatten()
    }

    fn choose_some(&self, prompt: &str, items: &[String], chosen: &[bool]) -> Option<Vec<usize>> {
        MultiSelect::new()
            .with_prompt(prompt)
            .items(items)
            .defaults(chosen)
            .interact_on_opt(&Term::stderr())
            .ok()
            .flatten()
    }

    fn confirm(&self, prompt: &str, default: bool) -> Option<bool> {
        Confirm::new()
            .with_prompt(prompt)
            .default(default)
            .interact_on_opt(&Term::stderr())
            .ok()
            .flatten()
    }

    fn line(
        &self,
        prompt: &str,
        default: Option<String>,
        optional: bool,
        valid: &dyn Fn(&str) -> Result<(), String>,
    ) -> Option<String> {
        let mut input = Input::<String>::new()
            .with_prompt(prompt)
            .allow_empty(optional)
            .validate_with(|text: &String| valid(text));
        if let Some(default) = default {
            input = input.default(default);
        }
        input.interact_text_on(&Term::stderr()).ok()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use serde_json::json;

    use super::*;

    /// Answers from a script, by prompt, recording the prompts.
    struct Scripted {
        answers: Map<String, Value>,
        prompts: RefCell<Vec<String>>,
    }

    impl Scripted {
        fn new(answers: Value) -> Self {
            Self {
                answers: answers.as_object().unwrap().clone(),
                prompts: RefCell::default(),
            }
        }

        fn next(&self, prompt: &str) -> Value {
            self.prompts.borrow_mut().push(prompt.to_owned());
            self.answers.get(prompt).cloned().unwrap_or(Value::Null)
        }
    }

    impl Person for Scripted {
        fn choose(&self, prompt: &str, items: &[String], _: usize) -> Option<usize> {
            let answer = self.next(prompt);
            let answer = answer.as_str()?;
            items.iter().position(|item| item == answer)
        }

        fn choose_some(&self, prompt: &str, items: &[String], _: &[bool]) -> Option<Vec<usize>> {
            let answer = self.next(prompt);
            Some(
                answer
                    .as_array()?
                    .iter()
                    .filter_map(|a| {
                        items
                            .iter()
                            .position(|item| Some(item.as_str()) == a.as_str())
                    })
                    .collect(),
            )
        }

        fn confirm(&self, prompt: &str, _: bool) -> Option<bool> {
            self.next(prompt).as_bool()
        }

        fn line(
            &self,
            prompt: &str,
            _: Option<String>,
            _: bool,
            valid: &dyn Fn(&str) -> Result<(), String>,
        ) -> Option<String> {
            let text = self.next(prompt).as_str()?.to_owned();
            valid(&text).ok().map(|()| text)
        }
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "description": "who\u{1b}[2J"},
                "age": {"type": "integer"},
                "ok": {"type": "boolean"},
                "color": {"type": "string", "oneOf": [
                    {"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
                "note": {"type": "string"}
            },
            "required": ["name", "age"]
        })
    }

    #[test]
    fn an_accepted_form_is_filled_field_by_field_and_typed() {
        let person = Scripted::new(json!({
            "Answer": "accept", "Name (who\\u{1b}[2J)": "ada", "age": "36", "ok": true,
            "color": "Green", "tags": ["a", "c"], "note": ""
        }));
        let answer = ask(&person, "s", "Who?", &schema());
        assert_eq!(answer.action, ElicitationAction::Accept);
        assert_eq!(
            answer.content,
            Some(json!({"name": "ada", "age": 36, "ok": true, "color": "g", "tags": ["a", "c"]})),
            "the optional note left empty is left out"
        );
        assert!(
            person
                .prompts
                .borrow()
                .contains(&"Name (who\\u{1b}[2J)".to_owned()),
            "the server's text escaped: {:?}",
            person.prompts.borrow()
        );
    }

    #[test]
    fn declining_cancelling_or_giving_up_is_answered_so() {
        for (answer, action) in [
            ("decline", ElicitationAction::Decline),
            ("cancel", ElicitationAction::Cancel),
        ] {
            let answered = ask(
                &Scripted::new(json!({ "Answer": answer })),
                "s",
                "?",
                &schema(),
            );
            assert_eq!(answered.action, action);
        }
        // Gave up in the middle of the form (the age was not a number).
        let gave_up = ask(
            &Scripted::new(
                json!({"Answer": "accept", "Name (who\\u{1b}[2J)": "ada", "age": "old"}),
            ),
            "s",
            "?",
            &schema(),
        );
        assert_eq!(gave_up.action, ElicitationAction::Cancel);
        assert_eq!(gave_up.content, None);
    }

    #[test]
    fn a_link_is_opened_only_when_the_person_agrees() {
        let opened = RefCell::new(Vec::new());
        let open = |url: &str| {
            opened.borrow_mut().push(url.to_owned());
            Ok(())
        };
        let url = "https://example.com/sign-in";
        for (said, action) in [
            (json!({ OPEN_LINK: true }), ElicitationAction::Accept),
            (json!({ OPEN_LINK: false }), ElicitationAction::Decline),
            (json!({}), ElicitationAction::Cancel),
        ] {
            let answer = ask_url(&Scripted::new(said), &open, "s", "sign in", url);
            assert_eq!(answer.action, action);
            assert_eq!(*opened.borrow(), [url], "opened once, when agreed");
        }
    }

    #[test]
    fn only_web_links_are_offered() {
        let open = |_: &str| -> std::io::Result<()> { panic!("not opened") };
        let person = Scripted::new(json!({ OPEN_LINK: true }));
        for url in ["file:///etc/passwd", "javascript:alert(1)", "ssh://host"] {
            let answer = ask_url(&person, &open, "s", "look", url);
            assert_eq!(answer.action, ElicitationAction::Decline, "{url}");
        }
        assert!(person.prompts.borrow().is_empty(), "never asked");
    }
}
