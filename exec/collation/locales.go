package collation

// locales are the locale IDs MongoDB 7.0 accepts (its documentation's "Supported Languages
// and Locales", ICU's canonical spelling), each with the x/text tag that collates it; an
// empty tag is a variant x/text has no table for (refused with NotImplemented).
var locales = map[string]string{
	"af": "af", "sq": "sq", "am": "am", "ar": "ar", "hy": "hy", "as": "as", "az": "az",
	"bn": "bn", "be": "be", "bs": "bs", "bs_Cyrl": "bs-Cyrl", "bg": "bg", "my": "my",
	"ca": "ca", "chr": "chr", "zh": "zh", "zh_Hant": "zh-Hant", "hr": "hr", "cs": "cs",
	"da": "da", "nl": "nl", "dz": "dz", "en": "en", "en_US": "en-US",
	"en_US_POSIX": "en-US-u-va-posix", "eo": "eo", "et": "et", "ee": "ee", "fo": "fo",
	"fil": "fil", "fi": "fi", "fi_FI": "fi-FI", "fr": "fr", "fr_CA": "fr-CA", "gl": "gl",
	"ka": "ka", "de": "de", "de_AT": "de-AT", "el": "el", "gu": "gu", "ha": "ha",
	"haw": "haw", "he": "he", "hi": "hi", "hu": "hu", "is": "is", "ig": "ig", "smn": "smn",
	"id": "id", "ga": "ga", "it": "it", "ja": "ja", "kl": "kl", "kn": "kn", "kk": "kk",
	"km": "km", "kok": "kok", "ko": "ko", "ky": "ky", "lkt": "lkt", "lo": "lo", "lv": "lv",
	"ln": "ln", "lt": "lt", "dsb": "dsb", "lb": "lb", "mk": "mk", "ms": "ms", "ml": "ml",
	"mt": "mt", "mr": "mr", "mn": "mn", "ne": "ne", "se": "se", "nb": "nb", "nn": "nn",
	"or": "or", "om": "om", "ps": "ps", "fa": "fa", "fa_AF": "fa-AF", "pl": "pl", "pt": "pt",
	"pa": "pa", "ro": "ro", "ru": "ru", "sr": "sr", "sr_Latn": "sr-Latn", "si": "si",
	"sk": "sk", "sl": "sl", "es": "es", "sw": "sw", "sv": "sv", "ta": "ta", "te": "te",
	"th": "th", "bo": "bo", "to": "to", "tr": "tr", "uk": "uk", "hsb": "hsb", "ur": "ur",
	"ug": "ug", "vi": "vi", "wae": "wae", "cy": "cy", "yi": "yi", "yo": "yo", "zu": "zu",

	"de@collation=phonebook":   "de-u-co-phonebk",
	"ln@collation=phonetic":    "ln-u-co-phonetic",
	"zh@collation=stroke":      "zh-u-co-stroke",
	"zh_Hant@collation=pinyin": "zh-Hant-u-co-pinyin",
	"es@collation=traditional": "", "fi_FI@collation=search": "", "ko@collation=search": "",
	"si@collation=dictionary": "", "sv@collation=search": "", "zh@collation=big5han": "",
	"zh@collation=gb2312han": "", "zh@collation=unihan": "", "zh@collation=zhuyin": "",
	"zh@collation=pinyin": "", "zh_Hant@collation=stroke": "",
}

// localeDefaults are the options ICU's CLDR data turns on for a locale (everything else
// defaults to tertiary strength, caseFirst "off", non-ignorable, punct).
var localeDefaults = map[string]func(*Spec){
	"fr_CA": func(s *Spec) { s.Backwards = true },
	"da":    func(s *Spec) { s.CaseFirst = "upper" },
	"mt":    func(s *Spec) { s.CaseFirst = "upper" },
	"th":    func(s *Spec) { s.Alternate = "shifted" },
}
