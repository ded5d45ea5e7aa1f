//! The numbers a contact's words hold: written in digits ("3", "1,200",
//! "3.5", "3,5") or in words of English, Spanish or Portuguese ("three",
//! "twenty-one", "veintitrés", "vinte e três", "a dozen").

use crate::courtesy::normalise;

/// A number found in the words, and whether it was written in digits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    pub value: f64,
    pub in_digits: bool,
}

/// Every number the words can be read as holding. A run of digits with
/// separators is read every way a person may have meant it ("1,200" is
/// 1200 or 1.2; "3,5" is 3.5 or 3 and 5), so a value matches if any
/// reading gives it.
pub fn numbers_in(text: &str) -> Vec<Found> {
    // Digits of any width or script as ASCII ones ("３" is "3").
    let text = &crate::courtesy::fold(text);
    let mut found: Vec<Found> = digit_runs(text).iter().flat_map(|run| readings(run)).collect();
    found.extend(worded(&normalise(text)).into_iter().map(|value| Found { value, in_digits: false }));
    found
}

/// Whether `value` is one of the numbers found.
pub fn holds(found: &[Found], value: f64) -> Option<Found> {
    found.iter().copied().find(|f| (f.value - value).abs() < 1e-9)
}

/// Runs of digits with `.` or `,` between them, with a leading minus when
/// it stands right before them.
fn digit_runs(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut runs = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        if !chars[at].is_ascii_digit() {
            at += 1;
            continue;
        }
        let negative = at > 0 && chars[at - 1] == '-' && (at < 2 || !chars[at - 2].is_alphanumeric());
        let start = at;
        while at < chars.len()
            && (chars[at].is_ascii_digit()
                || (matches!(chars[at], '.' | ',') && chars.get(at + 1).is_some_and(char::is_ascii_digit)))
        {
            at += 1;
        }
        let run: String = chars[start..at].iter().collect();
        runs.push(if negative { format!("-{run}") } else { run });
    }
    runs
}

/// The ways a run of digits can be read: grouping marks dropped where the
/// groups are of three, and either mark as the decimal one (never a piece
/// of it: "12.50" is no 12).
fn readings(run: &str) -> Vec<Found> {
    let (sign, digits) = match run.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, run),
    };
    let mut texts: Vec<String> = Vec::new();
    let groups: Vec<&str> = digits.split(['.', ',']).collect();
    if groups.len() == 1 {
        texts.push(digits.to_string());
    }
    if groups.len() > 1 && groups[1..].iter().all(|g| g.len() == 3) && groups[0].len() <= 3 {
        texts.push(groups.concat());
    }
    for (decimal, grouping) in [('.', ','), (',', '.')] {
        if let Some((whole, fraction)) = digits.rsplit_once(decimal)
            && !fraction.contains(grouping)
        {
            texts.push(format!("{}.{fraction}", whole.replace(grouping, "")));
        }
    }
    let mut found: Vec<Found> = texts
        .iter()
        .filter_map(|t| t.parse::<f64>().ok())
        .map(|value| Found { value: sign * value, in_digits: true })
        .collect();
    found.dedup();
    found
}

/// A number word's value and how it combines with those before it.
#[derive(Clone, Copy)]
enum Word {
    /// Added: "three", "twenty", "veintitrés", "doscientos".
    Add(f64),
    /// Multiplies what came before, or 1: "hundred".
    Hundred,
    /// Closes a group of thousands: "thousand", "mil".
    Thousand,
    /// Joins parts of one number: "and", "y", "e" (only between number words).
    Joiner,
}

fn word(w: &str) -> Option<Word> {
    use Word::*;
    let n = |v: f64| Some(Add(v));
    match w {
        "zero" | "cero" => n(0.0),
        "one" | "uno" | "una" | "um" | "uma" => n(1.0),
        "two" | "dos" | "dois" | "duas" => n(2.0),
        "three" | "tres" => n(3.0),
        "four" | "cuatro" | "quatro" => n(4.0),
        "five" | "cinco" => n(5.0),
        "six" | "seis" => n(6.0),
        "seven" | "siete" | "sete" => n(7.0),
        "eight" | "ocho" | "oito" => n(8.0),
        "nine" | "nueve" | "nove" => n(9.0),
        "ten" | "diez" | "dez" => n(10.0),
        "eleven" | "once" | "onze" => n(11.0),
        "twelve" | "doce" | "doze" | "dozen" | "docena" | "duzia" => n(12.0),
        "thirteen" | "trece" | "treze" => n(13.0),
        "fourteen" | "catorce" | "catorze" | "quatorze" => n(14.0),
        "fifteen" | "quince" | "quinze" => n(15.0),
        "sixteen" | "dieciseis" | "dezesseis" | "dezasseis" => n(16.0),
        "seventeen" | "diecisiete" | "dezessete" | "dezassete" => n(17.0),
        "eighteen" | "dieciocho" | "dezoito" => n(18.0),
        "nineteen" | "diecinueve" | "dezenove" | "dezanove" => n(19.0),
        "twenty" | "veinte" | "vinte" => n(20.0),
        "veintiuno" | "veintiuna" | "veintiun" => n(21.0),
        "veintidos" => n(22.0),
        "veintitres" => n(23.0),
        "veinticuatro" => n(24.0),
        "veinticinco" => n(25.0),
        "veintiseis" => n(26.0),
        "veintisiete" => n(27.0),
        "veintiocho" => n(28.0),
        "veintinueve" => n(29.0),
        "thirty" | "treinta" | "trinta" => n(30.0),
        "forty" | "cuarenta" | "quarenta" => n(40.0),
        "fifty" | "cincuenta" | "cinquenta" => n(50.0),
        "sixty" | "sesenta" | "sessenta" => n(60.0),
        "seventy" | "setenta" => n(70.0),
        "eighty" | "ochenta" | "oitenta" => n(80.0),
        "ninety" | "noventa" => n(90.0),
        "cien" | "ciento" | "cem" | "cento" => n(100.0),
        "doscientos" | "doscientas" | "duzentos" | "duzentas" => n(200.0),
        "trescientos" | "trescientas" | "trezentos" | "trezentas" => n(300.0),
        "cuatrocientos" | "cuatrocientas" | "quatrocentos" | "quatrocentas" => n(400.0),
        "quinientos" | "quinientas" | "quinhentos" | "quinhentas" => n(500.0),
        "seiscientos" | "seiscientas" | "seiscentos" | "seiscentas" => n(600.0),
        "setecientos" | "setecientas" | "setecentos" | "setecentas" => n(700.0),
        "ochocientos" | "ochocientas" | "oitocentos" | "oitocentas" => n(800.0),
        "novecientos" | "novecientas" | "novecentos" | "novecentas" => n(900.0),
        "hundred" => Some(Hundred),
        "thousand" | "mil" => Some(Thousand),
        "and" | "y" | "e" => Some(Joiner),
        _ => None,
    }
}

/// The numbers written in words in normalised `text`: each run of number
/// words is one number ("twenty one" is 21, not 20 or 1); words apart are
/// numbers apart ("two or three" holds 2 and 3).
fn worded(text: &str) -> Vec<f64> {
    let mut number = Worded::default();
    for w in text.split(' ') {
        match word(w) {
            Some(Word::Add(v)) => {
                // "two three" is two numbers; "twenty three" is one.
                let g = number.group;
                let joins = g == 0.0 || (g % 10.0 == 0.0 && v < 10.0) || (g % 100.0 == 0.0 && v < 100.0);
                if !joins {
                    number.close();
                }
                number.group += v;
                number.open = true;
            }
            Some(Word::Hundred) => {
                number.group = number.group.max(1.0) * 100.0;
                number.open = true;
            }
            Some(Word::Thousand) => {
                number.total += number.group.max(1.0) * 1000.0;
                number.group = 0.0;
                number.open = true;
            }
            Some(Word::Joiner) if number.open => {}
            _ => number.close(),
        }
    }
    number.close();
    number.found
}

/// The number being read: thousands closed, the group after them, and
/// whether a number word was seen.
#[derive(Default)]
struct Worded {
    total: f64,
    group: f64,
    open: bool,
    found: Vec<f64>,
}

impl Worded {
    fn close(&mut self) {
        if self.open {
            self.found.push(self.total + self.group);
        }
        (self.total, self.group, self.open) = (0.0, 0.0, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<f64> {
        numbers_in(text).iter().map(|f| f.value).collect()
    }

    #[test]
    fn numbers_in_digits_are_read_every_way_they_may_be_meant() {
        assert!(values("we are 3 people").contains(&3.0));
        let thousands = values("it costs 1,200 pesos");
        assert!(thousands.contains(&1200.0) && thousands.contains(&1.2), "{thousands:?}");
        assert!(values("3,5 kilos").contains(&3.5));
        assert!(values("reading: 12345.6").contains(&12345.6));
        assert!(values("it was -5 today").contains(&-5.0));
        assert!(!values("order 1042").contains(&104.0));
        assert!(!values("12.50 euros").contains(&12.0), "a piece of a number is no number");
        assert!(!values("1,200").contains(&200.0));
        assert!(values("somos ３ personas").contains(&3.0), "fullwidth digits");
    }

    #[test]
    fn numbers_in_words_compose_in_three_languages() {
        for (text, n) in [
            ("we are three", 3.0),
            ("twenty-one guests", 21.0),
            ("one hundred and five", 105.0),
            ("two thousand three hundred", 2300.0),
            ("somos veintitrés", 23.0),
            ("treinta y dos", 32.0),
            ("mil doscientos", 1200.0),
            ("ciento cinco", 105.0),
            ("somos vinte e três", 23.0),
            ("quinhentos e dez", 510.0),
            ("a dozen eggs", 12.0),
        ] {
            assert!(values(text).contains(&n), "{text}: {:?}", values(text));
        }
        assert!(values("two or three").contains(&2.0) && values("two or three").contains(&3.0));
        assert!(!values("two three").contains(&5.0), "two numbers, not their sum");
        assert!(!values("twenty-one").contains(&1.0) && !values("one hundred and five").contains(&5.0));
        assert!(!values("and e y").iter().any(|_| true), "joiners alone are no number");
    }
}
