//! The contact's time zone: given with `--tz`, or the zone of the number's
//! country where the country keeps one time, or `courtesy.default_tz`.
//!
//! [`COUNTRY_ZONES`] is the IANA tz database's `zone.tab` (public domain),
//! as tzdata 2025b ships it: each country's zones, its most populous first.
//! A country whose zones all keep the same time (Germany's Berlin and
//! Büsingen, Argentina's twelve) counts as keeping one.

use chrono::{Datelike, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::contact::Contact;

/// Where a conversation's time zone came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ZoneSource {
    /// Given at creation (`--tz`, `time_zone`).
    Given,
    /// The number's country keeps one time.
    Country,
    /// The number's country keeps several (or is unknown): `courtesy.default_tz`.
    Default,
}

/// The zone for `contact`: `given` if any, else its country's one zone,
/// else `default`.
pub fn zone_of(contact: &Contact, given: Option<Tz>, default: Tz) -> (Tz, ZoneSource) {
    if let Some(tz) = given {
        return (tz, ZoneSource::Given);
    }
    match country_of(contact).and_then(|country| one_zone(&country)) {
        Some(tz) => (tz, ZoneSource::Country),
        None => (default, ZoneSource::Default),
    }
}

/// The ISO country of a number ("CL"), when its digits tell one.
pub fn country_of(contact: &Contact) -> Option<String> {
    let number = phonenumber::parse(None, contact.as_str()).ok()?;
    number.country().id().map(|id| id.as_ref().to_string())
}

/// The zone of `country` if all its zones keep the same time: the same UTC
/// offset on the 1st and 15th of every month of this year and the next.
pub fn one_zone(country: &str) -> Option<Tz> {
    let (_, names) = COUNTRY_ZONES.iter().find(|(code, _)| *code == country)?;
    let zones: Vec<Tz> = names.iter().filter_map(|name| name.parse().ok()).collect();
    let first = *zones.first()?;
    let year = crate::clock::now().year();
    let samples = (year..=year + 1)
        .flat_map(|y| (1..=12).flat_map(move |m| [(y, m, 1), (y, m, 15)]))
        .filter_map(|(y, m, d)| Utc.with_ymd_and_hms(y, m, d, 12, 0, 0).single());
    let offset = |tz: &Tz, at| tz.offset_from_utc_datetime(&at).fix();
    let mut same =
        samples.clone().all(|at| zones.iter().all(|tz| offset(tz, at.naive_utc()) == offset(&first, at.naive_utc())));
    same &= samples.count() > 0;
    same.then_some(first)
}

/// Parses an IANA zone name ("America/Santiago"), in the user's words when it is not one.
pub fn parse_zone(name: &str) -> Result<Tz, String> {
    name.trim().parse::<Tz>().map_err(|_| {
        format!("'{name}' is not a time zone: give an IANA name such as America/Santiago or Europe/Madrid")
    })
}

/// Every name [`parse_zone`] takes as it is written (the tz database's, as
/// chrono-tz knows them): a time zone's JSON Schema `enum`.
pub fn zone_names() -> impl Iterator<Item = &'static str> {
    chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name())
}

/// Every country's zones, from the tz database's `zone.tab`.
#[rustfmt::skip]
pub const COUNTRY_ZONES: &[(&str, &[&str])] = &[
    ("AD", &["Europe/Andorra"]),
    ("AE", &["Asia/Dubai"]),
    ("AF", &["Asia/Kabul"]),
    ("AG", &["America/Antigua"]),
    ("AI", &["America/Anguilla"]),
    ("AL", &["Europe/Tirane"]),
    ("AM", &["Asia/Yerevan"]),
    ("AO", &["Africa/Luanda"]),
    ("AQ", &["Antarctica/McMurdo", "Antarctica/Casey", "Antarctica/Davis", "Antarctica/DumontDUrville", "Antarctica/Mawson", "Antarctica/Palmer", "Antarctica/Rothera", "Antarctica/Syowa", "Antarctica/Troll", "Antarctica/Vostok"]),
    ("AR", &["America/Argentina/Buenos_Aires", "America/Argentina/Cordoba", "America/Argentina/Salta", "America/Argentina/Jujuy", "America/Argentina/Tucuman", "America/Argentina/Catamarca", "America/Argentina/La_Rioja", "America/Argentina/San_Juan", "America/Argentina/Mendoza", "America/Argentina/San_Luis", "America/Argentina/Rio_Gallegos", "America/Argentina/Ushuaia"]),
    ("AS", &["Pacific/Pago_Pago"]),
    ("AT", &["Europe/Vienna"]),
    ("AU", &["Australia/Lord_Howe", "Antarctica/Macquarie", "Australia/Hobart", "Australia/Melbourne", "Australia/Sydney", "Australia/Broken_Hill", "Australia/Brisbane", "Australia/Lindeman", "Australia/Adelaide", "Australia/Darwin", "Australia/Perth", "Australia/Eucla"]),
    ("AW", &["America/Aruba"]),
    ("AX", &["Europe/Mariehamn"]),
    ("AZ", &["Asia/Baku"]),
    ("BA", &["Europe/Sarajevo"]),
    ("BB", &["America/Barbados"]),
    ("BD", &["Asia/Dhaka"]),
    ("BE", &["Europe/Brussels"]),
    ("BF", &["Africa/Ouagadougou"]),
    ("BG", &["Europe/Sofia"]),
    ("BH", &["Asia/Bahrain"]),
    ("BI", &["Africa/Bujumbura"]),
    ("BJ", &["Africa/Porto-Novo"]),
    ("BL", &["America/St_Barthelemy"]),
    ("BM", &["Atlantic/Bermuda"]),
    ("BN", &["Asia/Brunei"]),
    ("BO", &["America/La_Paz"]),
    ("BQ", &["America/Kralendijk"]),
    ("BR", &["America/Noronha", "America/Belem", "America/Fortaleza", "America/Recife", "America/Araguaina", "America/Maceio", "America/Bahia", "America/Sao_Paulo", "America/Campo_Grande", "America/Cuiaba", "America/Santarem", "America/Porto_Velho", "America/Boa_Vista", "America/Manaus", "America/Eirunepe", "America/Rio_Branco"]),
    ("BS", &["America/Nassau"]),
    ("BT", &["Asia/Thimphu"]),
    ("BW", &["Africa/Gaborone"]),
    ("BY", &["Europe/Minsk"]),
    ("BZ", &["America/Belize"]),
    ("CA", &["America/St_Johns", "America/Halifax", "America/Glace_Bay", "America/Moncton", "America/Goose_Bay", "America/Blanc-Sablon", "America/Toronto", "America/Iqaluit", "America/Atikokan", "America/Winnipeg", "America/Resolute", "America/Rankin_Inlet", "America/Regina", "America/Swift_Current", "America/Edmonton", "America/Cambridge_Bay", "America/Inuvik", "America/Creston", "America/Dawson_Creek", "America/Fort_Nelson", "America/Whitehorse", "America/Dawson", "America/Vancouver"]),
    ("CC", &["Indian/Cocos"]),
    ("CD", &["Africa/Kinshasa", "Africa/Lubumbashi"]),
    ("CF", &["Africa/Bangui"]),
    ("CG", &["Africa/Brazzaville"]),
    ("CH", &["Europe/Zurich"]),
    ("CI", &["Africa/Abidjan"]),
    ("CK", &["Pacific/Rarotonga"]),
    ("CL", &["America/Santiago", "America/Coyhaique", "America/Punta_Arenas", "Pacific/Easter"]),
    ("CM", &["Africa/Douala"]),
    ("CN", &["Asia/Shanghai", "Asia/Urumqi"]),
    ("CO", &["America/Bogota"]),
    ("CR", &["America/Costa_Rica"]),
    ("CU", &["America/Havana"]),
    ("CV", &["Atlantic/Cape_Verde"]),
    ("CW", &["America/Curacao"]),
    ("CX", &["Indian/Christmas"]),
    ("CY", &["Asia/Nicosia", "Asia/Famagusta"]),
    ("CZ", &["Europe/Prague"]),
    ("DE", &["Europe/Berlin", "Europe/Busingen"]),
    ("DJ", &["Africa/Djibouti"]),
    ("DK", &["Europe/Copenhagen"]),
    ("DM", &["America/Dominica"]),
    ("DO", &["America/Santo_Domingo"]),
    ("DZ", &["Africa/Algiers"]),
    ("EC", &["America/Guayaquil", "Pacific/Galapagos"]),
    ("EE", &["Europe/Tallinn"]),
    ("EG", &["Africa/Cairo"]),
    ("EH", &["Africa/El_Aaiun"]),
    ("ER", &["Africa/Asmara"]),
    ("ES", &["Europe/Madrid", "Africa/Ceuta", "Atlantic/Canary"]),
    ("ET", &["Africa/Addis_Ababa"]),
    ("FI", &["Europe/Helsinki"]),
    ("FJ", &["Pacific/Fiji"]),
    ("FK", &["Atlantic/Stanley"]),
    ("FM", &["Pacific/Chuuk", "Pacific/Pohnpei", "Pacific/Kosrae"]),
    ("FO", &["Atlantic/Faroe"]),
    ("FR", &["Europe/Paris"]),
    ("GA", &["Africa/Libreville"]),
    ("GB", &["Europe/London"]),
    ("GD", &["America/Grenada"]),
    ("GE", &["Asia/Tbilisi"]),
    ("GF", &["America/Cayenne"]),
    ("GG", &["Europe/Guernsey"]),
    ("GH", &["Africa/Accra"]),
    ("GI", &["Europe/Gibraltar"]),
    ("GL", &["America/Nuuk", "America/Danmarkshavn", "America/Scoresbysund", "America/Thule"]),
    ("GM", &["Africa/Banjul"]),
    ("GN", &["Africa/Conakry"]),
    ("GP", &["America/Guadeloupe"]),
    ("GQ", &["Africa/Malabo"]),
    ("GR", &["Europe/Athens"]),
    ("GS", &["Atlantic/South_Georgia"]),
    ("GT", &["America/Guatemala"]),
    ("GU", &["Pacific/Guam"]),
    ("GW", &["Africa/Bissau"]),
    ("GY", &["America/Guyana"]),
    ("HK", &["Asia/Hong_Kong"]),
    ("HN", &["America/Tegucigalpa"]),
    ("HR", &["Europe/Zagreb"]),
    ("HT", &["America/Port-au-Prince"]),
    ("HU", &["Europe/Budapest"]),
    ("ID", &["Asia/Jakarta", "Asia/Pontianak", "Asia/Makassar", "Asia/Jayapura"]),
    ("IE", &["Europe/Dublin"]),
    ("IL", &["Asia/Jerusalem"]),
    ("IM", &["Europe/Isle_of_Man"]),
    ("IN", &["Asia/Kolkata"]),
    ("IO", &["Indian/Chagos"]),
    ("IQ", &["Asia/Baghdad"]),
    ("IR", &["Asia/Tehran"]),
    ("IS", &["Atlantic/Reykjavik"]),
    ("IT", &["Europe/Rome"]),
    ("JE", &["Europe/Jersey"]),
    ("JM", &["America/Jamaica"]),
    ("JO", &["Asia/Amman"]),
    ("JP", &["Asia/Tokyo"]),
    ("KE", &["Africa/Nairobi"]),
    ("KG", &["Asia/Bishkek"]),
    ("KH", &["Asia/Phnom_Penh"]),
    ("KI", &["Pacific/Tarawa", "Pacific/Kanton", "Pacific/Kiritimati"]),
    ("KM", &["Indian/Comoro"]),
    ("KN", &["America/St_Kitts"]),
    ("KP", &["Asia/Pyongyang"]),
    ("KR", &["Asia/Seoul"]),
    ("KW", &["Asia/Kuwait"]),
    ("KY", &["America/Cayman"]),
    ("KZ", &["Asia/Almaty", "Asia/Qyzylorda", "Asia/Qostanay", "Asia/Aqtobe", "Asia/Aqtau", "Asia/Atyrau", "Asia/Oral"]),
    ("LA", &["Asia/Vientiane"]),
    ("LB", &["Asia/Beirut"]),
    ("LC", &["America/St_Lucia"]),
    ("LI", &["Europe/Vaduz"]),
    ("LK", &["Asia/Colombo"]),
    ("LR", &["Africa/Monrovia"]),
    ("LS", &["Africa/Maseru"]),
    ("LT", &["Europe/Vilnius"]),
    ("LU", &["Europe/Luxembourg"]),
    ("LV", &["Europe/Riga"]),
    ("LY", &["Africa/Tripoli"]),
    ("MA", &["Africa/Casablanca"]),
    ("MC", &["Europe/Monaco"]),
    ("MD", &["Europe/Chisinau"]),
    ("ME", &["Europe/Podgorica"]),
    ("MF", &["America/Marigot"]),
    ("MG", &["Indian/Antananarivo"]),
    ("MH", &["Pacific/Majuro", "Pacific/Kwajalein"]),
    ("MK", &["Europe/Skopje"]),
    ("ML", &["Africa/Bamako"]),
    ("MM", &["Asia/Yangon"]),
    ("MN", &["Asia/Ulaanbaatar", "Asia/Hovd"]),
    ("MO", &["Asia/Macau"]),
    ("MP", &["Pacific/Saipan"]),
    ("MQ", &["America/Martinique"]),
    ("MR", &["Africa/Nouakchott"]),
    ("MS", &["America/Montserrat"]),
    ("MT", &["Europe/Malta"]),
    ("MU", &["Indian/Mauritius"]),
    ("MV", &["Indian/Maldives"]),
    ("MW", &["Africa/Blantyre"]),
    ("MX", &["America/Mexico_City", "America/Cancun", "America/Merida", "America/Monterrey", "America/Matamoros", "America/Chihuahua", "America/Ciudad_Juarez", "America/Ojinaga", "America/Mazatlan", "America/Bahia_Banderas", "America/Hermosillo", "America/Tijuana"]),
    ("MY", &["Asia/Kuala_Lumpur", "Asia/Kuching"]),
    ("MZ", &["Africa/Maputo"]),
    ("NA", &["Africa/Windhoek"]),
    ("NC", &["Pacific/Noumea"]),
    ("NE", &["Africa/Niamey"]),
    ("NF", &["Pacific/Norfolk"]),
    ("NG", &["Africa/Lagos"]),
    ("NI", &["America/Managua"]),
    ("NL", &["Europe/Amsterdam"]),
    ("NO", &["Europe/Oslo"]),
    ("NP", &["Asia/Kathmandu"]),
    ("NR", &["Pacific/Nauru"]),
    ("NU", &["Pacific/Niue"]),
    ("NZ", &["Pacific/Auckland", "Pacific/Chatham"]),
    ("OM", &["Asia/Muscat"]),
    ("PA", &["America/Panama"]),
    ("PE", &["America/Lima"]),
    ("PF", &["Pacific/Tahiti", "Pacific/Marquesas", "Pacific/Gambier"]),
    ("PG", &["Pacific/Port_Moresby", "Pacific/Bougainville"]),
    ("PH", &["Asia/Manila"]),
    ("PK", &["Asia/Karachi"]),
    ("PL", &["Europe/Warsaw"]),
    ("PM", &["America/Miquelon"]),
    ("PN", &["Pacific/Pitcairn"]),
    ("PR", &["America/Puerto_Rico"]),
    ("PS", &["Asia/Gaza", "Asia/Hebron"]),
    ("PT", &["Europe/Lisbon", "Atlantic/Madeira", "Atlantic/Azores"]),
    ("PW", &["Pacific/Palau"]),
    ("PY", &["America/Asuncion"]),
    ("QA", &["Asia/Qatar"]),
    ("RE", &["Indian/Reunion"]),
    ("RO", &["Europe/Bucharest"]),
    ("RS", &["Europe/Belgrade"]),
    ("RU", &["Europe/Kaliningrad", "Europe/Moscow", "Europe/Kirov", "Europe/Volgograd", "Europe/Astrakhan", "Europe/Saratov", "Europe/Ulyanovsk", "Europe/Samara", "Asia/Yekaterinburg", "Asia/Omsk", "Asia/Novosibirsk", "Asia/Barnaul", "Asia/Tomsk", "Asia/Novokuznetsk", "Asia/Krasnoyarsk", "Asia/Irkutsk", "Asia/Chita", "Asia/Yakutsk", "Asia/Khandyga", "Asia/Vladivostok", "Asia/Ust-Nera", "Asia/Magadan", "Asia/Sakhalin", "Asia/Srednekolymsk", "Asia/Kamchatka", "Asia/Anadyr"]),
    ("RW", &["Africa/Kigali"]),
    ("SA", &["Asia/Riyadh"]),
    ("SB", &["Pacific/Guadalcanal"]),
    ("SC", &["Indian/Mahe"]),
    ("SD", &["Africa/Khartoum"]),
    ("SE", &["Europe/Stockholm"]),
    ("SG", &["Asia/Singapore"]),
    ("SH", &["Atlantic/St_Helena"]),
    ("SI", &["Europe/Ljubljana"]),
    ("SJ", &["Arctic/Longyearbyen"]),
    ("SK", &["Europe/Bratislava"]),
    ("SL", &["Africa/Freetown"]),
    ("SM", &["Europe/San_Marino"]),
    ("SN", &["Africa/Dakar"]),
    ("SO", &["Africa/Mogadishu"]),
    ("SR", &["America/Paramaribo"]),
    ("SS", &["Africa/Juba"]),
    ("ST", &["Africa/Sao_Tome"]),
    ("SV", &["America/El_Salvador"]),
    ("SX", &["America/Lower_Princes"]),
    ("SY", &["Asia/Damascus"]),
    ("SZ", &["Africa/Mbabane"]),
    ("TC", &["America/Grand_Turk"]),
    ("TD", &["Africa/Ndjamena"]),
    ("TF", &["Indian/Kerguelen"]),
    ("TG", &["Africa/Lome"]),
    ("TH", &["Asia/Bangkok"]),
    ("TJ", &["Asia/Dushanbe"]),
    ("TK", &["Pacific/Fakaofo"]),
    ("TL", &["Asia/Dili"]),
    ("TM", &["Asia/Ashgabat"]),
    ("TN", &["Africa/Tunis"]),
    ("TO", &["Pacific/Tongatapu"]),
    ("TR", &["Europe/Istanbul"]),
    ("TT", &["America/Port_of_Spain"]),
    ("TV", &["Pacific/Funafuti"]),
    ("TW", &["Asia/Taipei"]),
    ("TZ", &["Africa/Dar_es_Salaam"]),
    ("UA", &["Europe/Simferopol", "Europe/Kyiv"]),
    ("UG", &["Africa/Kampala"]),
    ("UM", &["Pacific/Midway", "Pacific/Wake"]),
    ("US", &["America/New_York", "America/Detroit", "America/Kentucky/Louisville", "America/Kentucky/Monticello", "America/Indiana/Indianapolis", "America/Indiana/Vincennes", "America/Indiana/Winamac", "America/Indiana/Marengo", "America/Indiana/Petersburg", "America/Indiana/Vevay", "America/Chicago", "America/Indiana/Tell_City", "America/Indiana/Knox", "America/Menominee", "America/North_Dakota/Center", "America/North_Dakota/New_Salem", "America/North_Dakota/Beulah", "America/Denver", "America/Boise", "America/Phoenix", "America/Los_Angeles", "America/Anchorage", "America/Juneau", "America/Sitka", "America/Metlakatla", "America/Yakutat", "America/Nome", "America/Adak", "Pacific/Honolulu"]),
    ("UY", &["America/Montevideo"]),
    ("UZ", &["Asia/Samarkand", "Asia/Tashkent"]),
    ("VA", &["Europe/Vatican"]),
    ("VC", &["America/St_Vincent"]),
    ("VE", &["America/Caracas"]),
    ("VG", &["America/Tortola"]),
    ("VI", &["America/St_Thomas"]),
    ("VN", &["Asia/Ho_Chi_Minh"]),
    ("VU", &["Pacific/Efate"]),
    ("WF", &["Pacific/Wallis"]),
    ("WS", &["Pacific/Apia"]),
    ("YE", &["Asia/Aden"]),
    ("YT", &["Indian/Mayotte"]),
    ("ZA", &["Africa/Johannesburg"]),
    ("ZM", &["Africa/Lusaka"]),
    ("ZW", &["Africa/Harare"]),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn contact(number: &str) -> Contact {
        Contact::parse(number).unwrap()
    }

    /// Every name the schema's `enum` lists is taken, and only zones are.
    #[test]
    fn every_listed_zone_name_parses() {
        let names: Vec<&str> = zone_names().collect();
        assert!(names.len() > 400 && names.contains(&"America/Santiago") && names.contains(&"UTC"));
        for name in names {
            assert_eq!(parse_zone(name).map(|tz| tz.name()), Ok(name));
        }
        assert!(parse_zone("Mars/Olympus_Mons").is_err());
    }

    #[test]
    fn every_zone_in_the_table_is_one_relay_can_use() {
        let unknown: Vec<&str> = COUNTRY_ZONES
            .iter()
            .flat_map(|(_, zones)| zones.iter())
            .filter(|z| z.parse::<Tz>().is_err())
            .copied()
            .collect();
        assert!(unknown.is_empty(), "zones chrono-tz does not know: {unknown:?}");
    }

    #[test]
    fn a_country_with_one_time_gives_its_zone_and_one_with_several_the_default() {
        let default = Tz::UTC;
        assert_eq!(zone_of(&contact("+34612345678"), None, default).1, ZoneSource::Default, "Spain: Canarias");
        assert_eq!(zone_of(&contact("+4915123456789"), None, default), (Tz::Europe__Berlin, ZoneSource::Country));
        assert_eq!(zone_of(&contact("+5491123456789"), None, default).1, ZoneSource::Country, "Argentina");
        assert_eq!(zone_of(&contact("+56912345678"), None, default), (default, ZoneSource::Default), "Chile");
        assert_eq!(zone_of(&contact("+14155552671"), None, default), (default, ZoneSource::Default), "USA");
        let given = Some(Tz::Pacific__Easter);
        assert_eq!(zone_of(&contact("+56912345678"), given, default), (Tz::Pacific__Easter, ZoneSource::Given));
    }

    #[test]
    fn a_wrong_zone_name_is_refused_in_words() {
        assert!(parse_zone("Mars/Olympus").unwrap_err().contains("IANA name"));
        assert_eq!(parse_zone(" Europe/Madrid ").unwrap(), Tz::Europe__Madrid);
    }
}
