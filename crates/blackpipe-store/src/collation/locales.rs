//! The locales mongod's collations accept (the manual's "Collation Locales and Default
//! Parameters" table), each with the `@collation=` variants it takes, mapped to the BCP-47
//! identifiers ICU4X loads.

use icu_locale_core::Locale;

/// Each locale mongod accepts, with its variants.
const LOCALES: &[(&str, &[&str])] = &[
    ("af", &[]),
    ("sq", &[]),
    ("am", &[]),
    ("ar", &["compat"]),
    ("hy", &[]),
    ("as", &[]),
    ("az", &["search"]),
    ("bn", &["traditional"]),
    ("be", &[]),
    ("bs", &["search"]),
    ("bs_Cyrl", &[]),
    ("bg", &[]),
    ("my", &[]),
    ("ca", &["search"]),
    ("chr", &[]),
    ("zh", &["big5han", "gb2312han", "unihan", "zhuyin"]),
    ("zh_Hant", &[]),
    ("hr", &["search"]),
    ("cs", &["search"]),
    ("da", &["search"]),
    ("nl", &[]),
    ("dz", &[]),
    ("en", &[]),
    ("en_US", &[]),
    ("en_US_POSIX", &[]),
    ("eo", &[]),
    ("et", &[]),
    ("ee", &[]),
    ("fo", &[]),
    ("fil", &[]),
    ("fi", &["search", "traditional"]),
    ("fr", &[]),
    ("fr_CA", &[]),
    ("gl", &["search"]),
    ("ka", &[]),
    ("de", &["search", "eor", "phonebook"]),
    ("de_AT", &["phonebook"]),
    ("el", &[]),
    ("gu", &[]),
    ("ha", &[]),
    ("haw", &[]),
    ("he", &["search"]),
    ("hi", &[]),
    ("hu", &[]),
    ("is", &["search"]),
    ("ig", &[]),
    ("smn", &["search"]),
    ("id", &[]),
    ("ga", &[]),
    ("it", &[]),
    ("ja", &["unihan"]),
    ("kl", &["search"]),
    ("kn", &["traditional"]),
    ("kk", &[]),
    ("km", &[]),
    ("kok", &[]),
    ("ko", &["search", "searchjl", "unihan"]),
    ("ky", &[]),
    ("lkt", &[]),
    ("lo", &[]),
    ("lv", &[]),
    ("ln", &["phonetic"]),
    ("lt", &[]),
    ("dsb", &[]),
    ("lb", &[]),
    ("mk", &[]),
    ("ms", &[]),
    ("ml", &[]),
    ("mt", &[]),
    ("mr", &[]),
    ("mn", &[]),
    ("ne", &[]),
    ("se", &["search"]),
    ("nb", &["search"]),
    ("nn", &["search"]),
    ("or", &[]),
    ("om", &[]),
    ("ps", &[]),
    ("fa", &[]),
    ("fa_AF", &[]),
    ("pl", &[]),
    ("pt", &[]),
    ("pa", &[]),
    ("ro", &[]),
    ("ru", &[]),
    ("sr", &[]),
    ("sr_Latn", &["search"]),
    ("si", &["dictionary"]),
    ("sk", &["search"]),
    ("sl", &[]),
    ("es", &["search", "traditional"]),
    ("sw", &[]),
    ("sv", &["search"]),
    ("ta", &[]),
    ("te", &[]),
    ("th", &[]),
    ("bo", &[]),
    ("to", &[]),
    ("tr", &["search"]),
    ("uk", &[]),
    ("hsb", &[]),
    ("ur", &[]),
    ("ug", &[]),
    ("vi", &["traditional"]),
    ("wae", &[]),
    ("cy", &[]),
    ("yi", &["search"]),
    ("yo", &[]),
    ("zu", &[]),
];

/// Locales whose ICU tailoring is not in ICU4X's compiled data, which would silently fall back
/// to the root order: refused rather than answered differently from mongod.
const LOCALES_WITHOUT_DATA: &[&str] = &[
    "bo", "dz", "haw", "kl", "lkt", "ln", "se", "smn", "wae", "yi",
];

/// Variants likewise missing from ICU4X's compiled data.
const VARIANTS_WITHOUT_DATA: &[&str] = &["search", "searchjl", "big5han", "gb2312han", "phonetic"];

/// What a `locale` string names.
pub(super) enum Lookup {
    /// A locale mongod accepts and blackpipe has the data for, as ICU4X's locale.
    Known(Locale),
    /// A locale mongod accepts whose collation data blackpipe does not have.
    WithoutData,
    /// Not a locale mongod accepts.
    Unknown,
}

/// Looks a MongoDB locale name (`"de_AT@collation=phonebook"`) up.
pub(super) fn lookup(name: &str) -> Lookup {
    let (base, variant) = match name.split_once("@collation=") {
        Some((base, variant)) => (base, Some(variant)),
        None => (name, None),
    };
    let Some((_, variants)) = LOCALES.iter().find(|(locale, _)| *locale == base) else {
        return Lookup::Unknown;
    };
    if variant.is_some_and(|variant| !variants.contains(&variant)) {
        return Lookup::Unknown;
    }
    if LOCALES_WITHOUT_DATA.contains(&base)
        || variant.is_some_and(|variant| VARIANTS_WITHOUT_DATA.contains(&variant))
    {
        return Lookup::WithoutData;
    }
    let mut bcp47 = if base == "en_US_POSIX" {
        "en-US-u-va-posix".to_owned()
    } else {
        base.replace('_', "-")
    };
    if let Some(variant) = variant {
        let collation_type = match variant {
            "phonebook" => "phonebk",
            "traditional" => "trad",
            "dictionary" => "dict",
            other => other,
        };
        bcp47.push_str(if bcp47.contains("-u-") {
            "-co-"
        } else {
            "-u-co-"
        });
        bcp47.push_str(collation_type);
    }
    match bcp47.parse::<Locale>() {
        Ok(locale) => Lookup::Known(locale),
        Err(_) => Lookup::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_locale_and_variant_resolves() {
        for (base, variants) in LOCALES {
            let names = std::iter::once((*base).to_owned())
                .chain(variants.iter().map(|v| format!("{base}@collation={v}")));
            for name in names {
                assert!(!matches!(lookup(&name), Lookup::Unknown), "{name}");
            }
        }
        assert!(matches!(lookup("EN"), Lookup::Unknown));
        assert!(matches!(lookup("en_GB"), Lookup::Unknown));
        assert!(matches!(lookup("en@collation=phonebook"), Lookup::Unknown));
        assert!(matches!(lookup("haw"), Lookup::WithoutData));
        assert!(matches!(lookup("de@collation=search"), Lookup::WithoutData));
    }
}
